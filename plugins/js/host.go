package js

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dop251/goja"
)

// Host is what the "agenthost" module reaches: in the plugin, the SDK's host
// functions, each granted by the manifest as for any plugin (kv, model,
// allowed_hosts, config). A refusal by the host ends the call there.
type Host interface {
	KVGet(key string) (string, bool, error)
	KVSet(key, value string) error
	KVDelete(key string) error
	Config(key string) (string, bool)
	HTTP(req HTTPRequest) (HTTPResponse, error)
	CreateMessage(req json.RawMessage) (json.RawMessage, error)
	Log(level, message string) error
	Progress(progress, total float64, message string) error
	// StreamResult sends a piece of the call's result (the SDK's stream_result): shown
	// live during a run, never stored; the handler's value stays the call's result.
	StreamResult(text string) error
	FS
}

// HTTPRequest is http.fetch's request; the host checks the URL's host
// against allowed_hosts.
type HTTPRequest struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// HTTPResponse is what http.fetch returns to JavaScript.
type HTTPResponse struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// CallMeta is the call being served, as callMeta() gives it to JavaScript.
type CallMeta struct {
	CallID    string `json:"callId"`
	SessionID string `json:"sessionId"`
	RunID     string `json:"runId"`
}

// reservedConfig prefixes the config keys the host gives the bundle in
// (jsbundle.ConfigBundle, ConfigFile): not the bundle's config.
const reservedConfig = "agenthost.js."

// module builds the object require("agenthost") returns.
func (e *Engine) module() *goja.Object {
	m := e.vm.NewObject()
	set := func(o *goja.Object, name string, v any) {
		if err := o.Set(name, v); err != nil {
			panic(err)
		}
	}
	set(m, "tool", e.declare)
	for name, export := range Hooks {
		set(m, name, func(fn goja.Value) {
			f, ok := goja.AssertFunction(fn)
			if _, taken := e.hooks[export]; !ok || taken || !e.loading {
				panic(e.vm.NewTypeError("%s(fn): one function, registered when the bundle loads", name))
			}
			e.hooks[export] = f
		})
	}
	kv := e.vm.NewObject()
	set(kv, "get", func(key string) goja.Value {
		v, ok, err := e.use("kv.get").KVGet(key)
		e.check("kv.get", err)
		if !ok {
			return goja.Null()
		}
		return e.vm.ToValue(v)
	})
	set(kv, "set", func(key, value string) { e.check("kv.set", e.use("kv.set").KVSet(key, value)) })
	set(kv, "delete", func(key string) { e.check("kv.delete", e.use("kv.delete").KVDelete(key)) })
	set(m, "kv", kv)
	config := e.vm.NewObject()
	set(config, "get", func(key string) goja.Value {
		if strings.HasPrefix(key, reservedConfig) {
			return goja.Undefined() // the bundle itself, the host's
		}
		if v, ok := e.use("config.get").Config(key); ok {
			return e.vm.ToValue(v)
		}
		return goja.Undefined()
	})
	set(m, "config", config)
	http := e.vm.NewObject()
	set(http, "fetch", e.fetch)
	set(m, "http", http)
	log := e.vm.NewObject()
	for _, level := range []string{"debug", "info", "warning", "error"} {
		set(log, level, func(msg string) { e.check("log", e.use("log."+level).Log(level, msg)) })
	}
	set(log, "warn", func(msg string) { e.check("log", e.use("log.warn").Log("warning", msg)) })
	set(m, "log", log)
	set(m, "progress", func(p, total float64, msg string) {
		e.check("progress", e.use("progress").Progress(p, total, msg))
	})
	set(m, "streamResult", e.streamResult)
	set(m, "fs", e.fsModule(set))
	set(m, "createMessage", e.createMessage)
	set(m, "callMeta", func() goja.Value {
		e.use("callMeta")
		return e.vm.ToValue(map[string]any{"callId": e.meta.CallID, "sessionId": e.meta.SessionID, "runId": e.meta.RunID})
	})
	return m
}

// use returns the host, or throws while the bundle loads: host functions
// answer calls, and a pre-initialised plugin's load may call none.
func (e *Engine) use(fn string) Host {
	if e.loading || e.host == nil {
		panic(e.vm.NewTypeError("%s: host functions are available in handlers only, not while the bundle loads", fn))
	}
	return e.host
}

// check throws err as a JavaScript Error naming fn.
func (e *Engine) check(fn string, err error) {
	if err != nil {
		panic(e.vm.NewGoError(fmt.Errorf("%s: %w", fn, err)))
	}
}

// streamResult is streamResult(text): a piece of the call's result, sent as it
// comes. Only a string is a piece (an object would arrive as "[object Object]");
// an empty one sends nothing, as the SDK's does.
func (e *Engine) streamResult(text goja.Value) {
	h := e.use("streamResult")
	s, ok := text.Export().(string)
	if !ok {
		panic(e.vm.NewTypeError("streamResult(text): text must be a string"))
	}
	if s != "" {
		e.check("streamResult", h.StreamResult(s))
	}
}

// fetch is http.fetch(url, {method, headers, body}) → {status, body}.
func (e *Engine) fetch(url string, opts goja.Value) goja.Value {
	h := e.use("http.fetch")
	req := HTTPRequest{URL: url, Method: "GET"}
	if opts != nil && !goja.IsUndefined(opts) && !goja.IsNull(opts) {
		if err := e.vm.ExportTo(opts, &req); err != nil {
			panic(e.vm.NewTypeError("http.fetch: options: %v", err))
		}
		req.URL = url
		if req.Method == "" {
			req.Method = "GET"
		}
	}
	res, err := h.HTTP(req)
	e.check("http.fetch", err)
	return e.vm.ToValue(map[string]any{"status": res.Status, "body": res.Body})
}

// createMessage is createMessage(params) → result, MCP's sampling shapes.
func (e *Engine) createMessage(params goja.Value) goja.Value {
	h := e.use("createMessage")
	in, err := e.stringify(params)
	if err != nil {
		panic(e.vm.NewTypeError("createMessage: %v", err))
	}
	out, err := h.CreateMessage(json.RawMessage(in))
	e.check("createMessage", err)
	v, err := e.parse(string(out))
	e.check("createMessage", err)
	return v
}

// parse is JSON.parse.
func (e *Engine) parse(s string) (goja.Value, error) {
	if e.jsonParse == nil {
		f, _ := goja.AssertFunction(e.vm.Get("JSON").ToObject(e.vm).Get("parse"))
		e.jsonParse = f
	}
	return e.run(func() (goja.Value, error) { return e.jsonParse(goja.Undefined(), e.vm.ToValue(s)) })
}
