// wc — an example WASI command tool in C (wasi ABI, no SDK): reads the tool
// arguments {"text": "..."} from stdin and prints "W words, L lines, C characters".
// Characters are Unicode code points; a line is a "\n"-terminated run, plus
// a last unterminated one. Exit 2 (an error result) when "text" is missing.
//
//   clang --target=wasm32-wasi --sysroot=/usr/share/wasi-sysroot -O2 -o wc.wasm wc.c
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(FILE *f, size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  *len = n;
  return buf;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static size_t put_utf8(char *out, unsigned cp) {
  if (cp < 0x80) { out[0] = cp; return 1; }
  if (cp < 0x800) { out[0] = 0xC0 | cp >> 6; out[1] = 0x80 | (cp & 0x3F); return 2; }
  out[0] = 0xE0 | cp >> 12; out[1] = 0x80 | ((cp >> 6) & 0x3F); out[2] = 0x80 | (cp & 0x3F);
  return 3;
}

// json_string finds "key": "..." in a flat JSON object and decodes the value
// into a fresh buffer (surrogate pairs are decoded as two code points of 3 bytes).
static char *json_string(const char *s, size_t n, const char *key, size_t *outlen) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", key);
  const char *p = strstr(s, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (p < s + n && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ':')) p++;
  if (p >= s + n || *p != '"') return NULL;
  p++;
  char *out = malloc(n + 1), *o = out;
  while (p < s + n && *p != '"') {
    if (*p != '\\') { *o++ = *p++; continue; }
    if (++p >= s + n) break;
    switch (*p) {
    case 'n': *o++ = '\n'; break;
    case 't': *o++ = '\t'; break;
    case 'r': *o++ = '\r'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'u': {
      unsigned cp = 0;
      for (int i = 1; i <= 4 && p + i < s + n; i++) cp = cp * 16 + (unsigned)hexval(p[i]);
      o += put_utf8(o, cp);
      p += 4;
      break;
    }
    default: *o++ = *p;  // \" \\ \/
    }
    p++;
  }
  *outlen = (size_t)(o - out);
  return out;
}

int main(void) {
  size_t n, len;
  char *in = read_all(stdin, &n);
  if (!in) { fputs("wc: out of memory\n", stderr); return 1; }
  in = realloc(in, n + 1);
  in[n] = 0;
  char *text = json_string(in, n, "text", &len);
  if (!text) { fputs("wc: missing \"text\" string argument\n", stderr); return 2; }
  long words = 0, lines = 0, chars = 0;
  int inword = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if ((c & 0xC0) != 0x80) chars++;
    if (c == '\n') lines++;
    int space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
    if (!space && !inword) words++;
    inword = !space;
  }
  if (len > 0 && text[len - 1] != '\n') lines++;
  printf("%ld words, %ld lines, %ld characters\n", words, lines, chars);
  return 0;
}
