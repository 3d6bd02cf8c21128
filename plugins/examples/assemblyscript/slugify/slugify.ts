// slugify — an example WASI command tool in AssemblyScript (wasi ABI, no SDK):
// reads the tool arguments {"text": "..."} from stdin and prints a URL slug:
// ASCII letters lower-cased, digits kept, every other run of characters
// (non-ASCII included) one "-", no leading or trailing "-".
// "Hello, World! 2024" → "hello-world-2024". Exit 2 when "text" is missing.
//
//   asc slugify/slugify.ts --runtime stub --use abort= -O3 --noAssert -o slugify/slugify.wasm

@external("wasi_snapshot_preview1", "fd_read")
declare function fd_read(fd: u32, iovs: usize, iovsLen: u32, nread: usize): u16;
@external("wasi_snapshot_preview1", "fd_write")
declare function fd_write(fd: u32, iovs: usize, iovsLen: u32, nwritten: usize): u16;
@external("wasi_snapshot_preview1", "proc_exit")
declare function proc_exit(code: u32): void;

const scratch = memory.data(16); // iovec {ptr, len} and the byte count

function readStdin(): Uint8Array {
  let buf = new Uint8Array(4096);
  let len = 0;
  while (true) {
    if (len == buf.length) {
      const bigger = new Uint8Array(buf.length * 2);
      bigger.set(buf);
      buf = bigger;
    }
    store<u32>(scratch, buf.dataStart + len);
    store<u32>(scratch, buf.length - len, 4);
    if (fd_read(0, scratch, 1, scratch + 8) != 0) break;
    const n = load<u32>(scratch, 8);
    if (n == 0) break;
    len += n;
  }
  return buf.subarray(0, len);
}

function write(fd: u32, bytes: Uint8Array): void {
  store<u32>(scratch, bytes.dataStart);
  store<u32>(scratch, bytes.length, 4);
  fd_write(fd, scratch, 1, scratch + 8);
}

function fail(message: string): void {
  write(2, Uint8Array.wrap(String.UTF8.encode(message + "\n")));
  proc_exit(2);
}

// textValue finds "text" : "..." and returns the raw bytes of the value up to
// the closing quote, with \" \\ \/ \n \t \r unescaped (\uXXXX stays a separator).
function textValue(input: Uint8Array): Uint8Array | null {
  const key = "\"text\"";
  let i = 0;
  for (; i + key.length <= input.length; i++) {
    let match = true;
    for (let k = 0; k < key.length; k++) {
      if (input[i + k] != <u8>key.charCodeAt(k)) { match = false; break; }
    }
    if (match) break;
  }
  if (i + key.length > input.length) return null;
  i += key.length;
  while (i < input.length && (input[i] == 0x20 || input[i] == 0x3a || input[i] == 0x0a || input[i] == 0x09)) i++;
  if (i >= input.length || input[i] != 0x22) return null;
  i++;
  const out = new Uint8Array(input.length);
  let n = 0;
  while (i < input.length && input[i] != 0x22) {
    let c = input[i];
    if (c == 0x5c && i + 1 < input.length) {
      i++;
      c = input[i];
      if (c == 0x6e || c == 0x74 || c == 0x72) c = 0x20; // \n \t \r: separators anyway
      else if (c == 0x75) { c = 0x20; i += 4; }           // \uXXXX: a separator
    }
    out[n++] = c;
    i++;
  }
  return out.subarray(0, n);
}

export function _start(): void {
  const text = textValue(readStdin());
  if (text == null) {
    fail("slugify: missing \"text\" string argument");
    return;
  }
  const t = text;
  const out = new Uint8Array(t.length + 1);
  let n = 0;
  let dash = false;
  for (let i = 0; i < t.length; i++) {
    let c = t[i];
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    const keep = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39);
    if (keep) {
      if (dash && n > 0) out[n++] = 0x2d;
      out[n++] = c;
      dash = false;
    } else {
      dash = true;
    }
  }
  out[n++] = 0x0a;
  write(1, out.subarray(0, n));
}
