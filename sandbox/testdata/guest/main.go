//go:build wasip1

// Command guest is the Go-built test plugin of the sandbox tests (Extism ABI,
// built with GOOS=wasip1 -buildmode=c-shared). Each export exercises one
// permission: a granted use must work, an ungranted one must fail.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {}

//go:wasmimport extism:host/user kv_get
func kvGet(key uint64) uint64

//go:wasmimport extism:host/user kv_set
func kvSet(key, value uint64)

//go:wasmimport extism:host/user kv_delete
func kvDelete(key uint64)

//go:wasmimport extism:host/user create_message
func createMessage(req uint64) uint64

//go:wasmimport extism:host/user notify_progress
func notifyProgress(params uint64)

//go:wasmimport extism:host/user call_meta
func callMeta() uint64

//go:wasmimport extism:host/user create_elicitation
func createElicitation(req uint64) uint64

// greet answers "Hello, <input>!": the warm-call benchmark export.
//
//go:wasmexport greet
func greet() int32 {
	return output([]byte("Hello, " + string(input()) + "!"))
}

// read_file returns the content of the guest path given as input.
//
//go:wasmexport read_file
func readFile() int32 {
	b, err := os.ReadFile(string(input()))
	if err != nil {
		return fail(err.Error())
	}
	return output(b)
}

// write_file writes {"path","text"}.
//
//go:wasmexport write_file
func writeFile() int32 {
	var in struct{ Path, Text string }
	if err := json.Unmarshal(input(), &in); err != nil {
		return fail(err.Error())
	}
	if err := os.WriteFile(in.Path, []byte(in.Text), 0o644); err != nil {
		return fail(err.Error())
	}
	return output([]byte("ok"))
}

// getenv returns the variable named by the input, failing when it is unset.
//
//go:wasmexport getenv
func getenv() int32 {
	name := string(input())
	v, ok := os.LookupEnv(name)
	if !ok {
		return fail(fmt.Sprintf("%s is not set (environ: %q)", name, strings.Join(os.Environ(), ",")))
	}
	return output([]byte(v))
}

// config returns the config value named by the input.
//
//go:wasmexport config
func config() int32 {
	offs := extismConfigGet(store(input()))
	if offs == 0 {
		return fail("no config " + string(input()))
	}
	return output(load(offs))
}

// fetch GETs the URL given as input and returns "<status> <body>".
//
//go:wasmexport fetch
func fetch() int32 {
	req, _ := json.Marshal(map[string]any{"url": string(input()), "method": "GET"})
	body := load(extismHTTPRequest(store(req), 0))
	return output([]byte(fmt.Sprintf("%d %s", extismHTTPStatusCode(), body)))
}

// kv stores the input under "k", reads it back and deletes it.
//
//go:wasmexport kv
func kv() int32 {
	key := func() uint64 { return store([]byte("k")) }
	before := load(kvGet(key()))
	kvSet(key(), store(input()))
	after := load(kvGet(key()))
	kvDelete(key())
	gone := kvGet(key()) == 0
	return output([]byte(fmt.Sprintf("before=%q after=%q gone=%v", before, after, gone)))
}

// ask sends the input as a sampling request to the host model and reports progress.
//
//go:wasmexport ask
func ask() int32 {
	notifyProgress(store([]byte(`{"progressToken":"t","progress":1}`)))
	return output(load(createMessage(store(input()))))
}

// elicit asks the user (create_elicitation) with its input and answers the answer.
//
//go:wasmexport elicit
func elicit() int32 {
	return output(load(createElicitation(store(input()))))
}

// call_ids answers the current call's ids (call_meta), so a tool with side effects can
// key them by the call id.
//
//go:wasmexport call_ids
func callIDs() int32 {
	return output(load(callMeta()))
}

// spin never returns.
//
//go:wasmexport spin
func spin() int32 {
	for {
	}
}

// hog allocates until the memory limit stops it.
//
//go:wasmexport hog
func hog() int32 {
	var keep [][]byte
	for {
		keep = append(keep, make([]byte, 1<<20))
	}
}

// exit ends the module with the exit code 7.
//
//go:wasmexport exit
func exit() int32 {
	os.Exit(7)
	return 0
}

// fsop runs one filesystem operation {"op","path","to","n"} and answers
// "ok", the data read, or fails with the error: the sandbox's filesystem
// tests drive every WASI path call through it. "flip" and "probe" loop n
// times for the race test: flip turns path into a symlink to `to` and back
// into a directory; probe reads and appends to path, answering what it read.
//
//go:wasmexport fsop
func fsop() int32 {
	var in struct {
		Op, Path, To string
		N            int
	}
	if err := json.Unmarshal(input(), &in); err != nil {
		return fail(err.Error())
	}
	var out string
	var err error
	switch in.Op {
	case "symlink":
		err = os.Symlink(in.To, in.Path)
	case "link":
		err = os.Link(in.Path, in.To)
	case "rename":
		err = os.Rename(in.Path, in.To)
	case "mkdir":
		err = os.Mkdir(in.Path, 0o755)
	case "remove":
		err = os.Remove(in.Path)
	case "readlink":
		out, err = os.Readlink(in.Path)
	case "read":
		var b []byte
		b, err = os.ReadFile(in.Path)
		out = string(b)
	case "write":
		err = os.WriteFile(in.Path, []byte(in.To), 0o644)
	case "append":
		var f *os.File
		if f, err = os.OpenFile(in.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, err = f.WriteString(in.To)
			f.Close()
		}
	case "stat":
		var fi os.FileInfo
		if fi, err = os.Stat(in.Path); err == nil {
			out = fmt.Sprintf("%s %d", fi.Mode(), fi.Size())
		}
	case "lstat":
		var fi os.FileInfo
		if fi, err = os.Lstat(in.Path); err == nil {
			out = fi.Mode().String()
		}
	case "readdir":
		var ents []os.DirEntry
		ents, err = os.ReadDir(in.Path)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name()+":"+e.Type().String())
		}
		out = strings.Join(names, ",")
	case "chtimes":
		t := time.Unix(1e9, 0)
		err = os.Chtimes(in.Path, t, t)
	case "truncate":
		err = os.Truncate(in.Path, 0)
	case "flip":
		for i := 0; i < in.N; i++ {
			os.RemoveAll(in.Path)
			os.Symlink(in.To, in.Path)
			os.Remove(in.Path)
			os.Mkdir(in.Path, 0o755)
		}
	case "probe":
		seen := map[string]bool{}
		for i := 0; i < in.N; i++ {
			if b, err := os.ReadFile(in.Path); err == nil {
				seen[string(b)] = true
			}
			if f, err := os.OpenFile(in.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
				f.WriteString("pwned")
				f.Close()
			}
		}
		var read []string
		for s := range seen {
			read = append(read, s)
		}
		out = strings.Join(read, "|")
	default:
		return fail("unknown op " + in.Op)
	}
	if err != nil {
		return fail(err.Error())
	}
	if out == "" {
		out = "ok"
	}
	return output([]byte(out))
}

// calls counts the counter calls this instance served: state a later call
// sees only if it runs on the same instance.
var calls int

// counter answers how many times this instance has been called, this call
// included.
//
//go:wasmexport counter
func counter() int32 {
	calls++
	return output([]byte(fmt.Sprint(calls)))
}

// bad_utf8 answers invalid UTF-8: as plain output ("plain"), inside a
// CallToolResult JSON ("json") or as its error message ("error").
//
//go:wasmexport bad_utf8
func badUTF8() int32 {
	switch string(input()) {
	case "json":
		return output([]byte("{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}],\"structuredContent\":{\"k\":\"\xff\xfe\"}}"))
	case "error":
		return fail("bad \xff error")
	}
	return output([]byte("caf\xe9 \xff\xfe!"))
}

//go:wasmimport extism:host/env log_info
func extismLogInfo(offs uint64)

//go:wasmimport extism:host/env log_warn
func extismLogWarn(offs uint64)

//go:wasmimport extism:host/env log_debug
func extismLogDebug(offs uint64)

// chatty writes to stdout and stderr and logs through Extism at three levels, as a
// plugin author debugging would; with input "trap" it then crashes.
//
//go:wasmexport chatty
func chatty() int32 {
	fmt.Println("to stdout")
	fmt.Fprintln(os.Stderr, "to stderr")
	extismLogInfo(store([]byte("an info line")))
	extismLogWarn(store([]byte("a warning")))
	extismLogDebug(store([]byte("a debug line")))
	if string(input()) == "trap" {
		panic("chatty crashed")
	}
	if string(input()) == "flood" {
		os.Stdout.Write([]byte(strings.Repeat("x", 100<<10)))
	}
	return output([]byte("said it all"))
}

// nap sleeps for the duration given as input (time.Sleep: WASI poll_oneoff)
// and answers "woke".
//
//go:wasmexport nap
func nap() int32 {
	d, err := time.ParseDuration(string(input()))
	if err != nil {
		return fail(err.Error())
	}
	time.Sleep(d)
	return output([]byte("woke"))
}

//go:wasmimport extism:host/user notify_logging_message
func notifyLoggingMessage(params uint64)

//go:wasmimport extism:host/env free
func extismFree(offs uint64)

// notified sends b with notify_logging_message and frees its block (the
// kernel's allocator slows down with each block left allocated; Extism's log
// functions free theirs themselves).
func notified(b []byte) {
	offs := store(b)
	notifyLoggingMessage(offs)
	extismFree(offs)
}

// loud_error fails with an error message (error_set) of as many bytes as
// the input says.
//
//go:wasmexport loud_error
func loudError() int32 {
	var n int
	fmt.Sscan(string(input()), &n)
	return fail(strings.Repeat("e", n))
}

// log_flood logs one 100 KiB line, then "lines notices" (the input) short
// lines through Extism's log_info and notify_logging_message notifications.
//
//go:wasmexport log_flood
func logFlood() int32 {
	var n, notices int
	fmt.Sscan(string(input()), &n, &notices)
	extismLogInfo(store([]byte(strings.Repeat("L", 100<<10))))
	for i := 0; i < n; i++ {
		extismLogInfo(store([]byte(fmt.Sprint("line ", i))))
	}
	for i := 0; i < notices; i++ {
		notified([]byte(fmt.Sprintf(`{"level":"info","data":"notice %d"}`, i)))
	}
	return output([]byte("logged"))
}

//go:wasmimport extism:host/user stream_result
func streamResult(text uint64)

// stream_hostile streams a piece of invalid UTF-8, an empty piece (offset 0), then
// 1,500 pieces: more than a call may notify.
//
//go:wasmexport stream_hostile
func streamHostile() int32 {
	offs := store([]byte("\xff ok"))
	streamResult(offs)
	extismFree(offs)
	streamResult(0)
	for i := 0; i < 1500; i++ {
		offs := store([]byte("piece"))
		streamResult(offs)
		extismFree(offs)
	}
	return output([]byte("streamed"))
}
