package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	extism "github.com/extism/go-sdk"
)

// The host functions every extism-based plugin can import from
// "extism:host/user". Pointers are Extism memory offsets (i64), as with any
// Extism host function: the guest allocates a block, passes its offset, and
// reads the block whose offset is returned.
//
//	kv_get(key i64) -> i64            value block, 0 when the key is absent
//	kv_set(key i64, value i64)        value 0 stores an empty value
//	kv_delete(key i64)
//	create_message(req i64) -> i64    MCP CreateMessageRequestParam → CreateMessageResult (JSON)
//	notify_progress(params i64)       MCP ProgressNotificationParam → Host.Notify("notifications/progress")
//	notify_logging_message(params i64) MCP LoggingMessageNotificationParam → Host.Notify("notifications/message")
//	stream_result(text i64)           a piece of the call's result (UTF-8 text) → Host.Notify(MethodResultDelta)
//	call_meta() -> i64                {"call_id","session_id","run_id"} of the current call (hostcallmeta.go)
//
//	create_elicitation(req i64) -> i64 MCP ElicitRequestParams → ElicitResult: the host's
//	                                  Eliciter when it is one, else {"action":"decline"}
//
// Stubs, so hyper-mcp modules that import them link:
//
//	list_roots() -> i64                  always {"roots":[]}
//	notify_tool_list_changed(), notify_prompt_list_changed(),
//	notify_resource_list_changed(), notify_resource_updated(params i64)   no-ops
//
// kv_* need Permissions.KV and create_message needs Permissions.Model; without
// them the call fails with a message naming the missing permission.
func (p *Plugin) hostFunctions() []extism.HostFunction {
	i64 := extism.ValueTypeI64
	fn := func(name string, params, results []extism.ValueType, f extism.HostFunctionStackCallback) extism.HostFunction {
		return extism.NewHostFunctionWithStack(name, f, params, results)
	}
	return []extism.HostFunction{
		fn("kv_get", []extism.ValueType{i64}, []extism.ValueType{i64}, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			key := p.hostString(ctx, cp, "kv_get", stack[0])
			p.requireKV(ctx, "kv_get")
			val, ok, err := p.host().KVGet(ctx, p.name, key)
			if err != nil {
				p.hostFail(ctx, fmt.Errorf("kv_get %q: %w", key, err))
			}
			stack[0] = 0
			if ok {
				stack[0] = p.hostWrite(ctx, cp, "kv_get", val)
			}
		}),
		fn("kv_set", []extism.ValueType{i64, i64}, nil, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			key := p.hostString(ctx, cp, "kv_set", stack[0])
			val := p.hostBytes(ctx, cp, "kv_set", stack[1])
			p.requireKV(ctx, "kv_set")
			if err := p.host().KVSet(ctx, p.name, key, val); err != nil {
				p.hostFail(ctx, fmt.Errorf("kv_set %q: %w", key, err))
			}
		}),
		fn("kv_delete", []extism.ValueType{i64}, nil, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			key := p.hostString(ctx, cp, "kv_delete", stack[0])
			p.requireKV(ctx, "kv_delete")
			if err := p.host().KVDelete(ctx, p.name, key); err != nil {
				p.hostFail(ctx, fmt.Errorf("kv_delete %q: %w", key, err))
			}
		}),
		fn("create_message", []extism.ValueType{i64}, []extism.ValueType{i64}, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			req := p.hostBytes(ctx, cp, "create_message", stack[0])
			if !p.perms.Model {
				p.hostFail(ctx, fmt.Errorf("create_message: plugin %q has no model permission", p.name))
			}
			if !json.Valid(req) {
				p.hostFail(ctx, errors.New("create_message: request is not JSON"))
			}
			res, err := p.host().CreateMessage(ctx, p.name, req)
			if err != nil {
				p.hostFail(ctx, fmt.Errorf("create_message: %w", err))
			}
			stack[0] = p.hostWrite(ctx, cp, "create_message", res)
		}),
		p.callMetaFunc(), // call_meta() -> i64 (hostcallmeta.go)
		p.notifyFunc("notify_progress", "notifications/progress"),
		p.notifyFunc("notify_logging_message", "notifications/message"),
		fn("stream_result", []extism.ValueType{i64}, nil, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			if !noticeAllowed(ctx) {
				return // counted with the notify_* calls; not even read
			}
			text := p.hostBytes(ctx, cp, "stream_result", stack[0])
			if len(text) == 0 {
				return
			}
			params, _ := json.Marshal(struct {
				Text string `json:"text"`
			}{string(text)}) // invalid UTF-8 becomes U+FFFD
			p.host().Notify(ctx, p.name, MethodResultDelta, params)
		}),
		fn("notify_resource_updated", []extism.ValueType{i64}, nil, func(context.Context, *extism.CurrentPlugin, []uint64) {}),
		fn("notify_tool_list_changed", nil, nil, func(ctx context.Context, _ *extism.CurrentPlugin, _ []uint64) {
			if !noticeAllowed(ctx) {
				return
			}
			p.host().Notify(ctx, p.name, "notifications/tools/list_changed", nil)
		}),
		fn("notify_prompt_list_changed", nil, nil, func(context.Context, *extism.CurrentPlugin, []uint64) {}),
		fn("notify_resource_list_changed", nil, nil, func(context.Context, *extism.CurrentPlugin, []uint64) {}),
		fn("create_elicitation", []extism.ValueType{i64}, []extism.ValueType{i64}, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			stack[0] = p.hostWrite(ctx, cp, "create_elicitation", p.elicit(ctx, p.hostBytes(ctx, cp, "create_elicitation", stack[0])))
		}),
		fn("list_roots", nil, []extism.ValueType{i64}, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
			stack[0] = p.hostWrite(ctx, cp, "list_roots", []byte(`{"roots":[]}`))
		}),
	}
}

// elicit answers create_elicitation: the host asks (Eliciter) or the answer is a decline.
func (p *Plugin) elicit(ctx context.Context, req []byte) []byte {
	e, ok := p.host().(Eliciter)
	if !ok {
		return []byte(`{"action":"decline"}`)
	}
	if !json.Valid(req) {
		p.hostFail(ctx, errors.New("create_elicitation: request is not JSON"))
	}
	res, err := e.Elicit(ctx, p.name, req)
	if err != nil {
		p.hostFail(ctx, fmt.Errorf("create_elicitation: %w", err))
	}
	return res
}

func (p *Plugin) notifyFunc(name, method string) extism.HostFunction {
	return extism.NewHostFunctionWithStack(name, func(ctx context.Context, cp *extism.CurrentPlugin, stack []uint64) {
		if !noticeAllowed(ctx) {
			return // counted; not even read
		}
		params := p.hostBytes(ctx, cp, name, stack[0])
		if !json.Valid(params) {
			p.hostFail(ctx, fmt.Errorf("%s: params are not JSON", name))
		}
		p.host().Notify(ctx, p.name, method, params)
	}, []extism.ValueType{extism.ValueTypeI64}, nil)
}

// noticeAllowed counts a notification against the call's maxCallNotices
// (output.go) and says whether to forward it.
func noticeAllowed(ctx context.Context) bool {
	st, ok := ctx.Value(callStateKey{}).(*callState)
	return !ok || st.notice()
}

func (p *Plugin) requireKV(ctx context.Context, fn string) {
	if !p.perms.KV {
		p.hostFail(ctx, fmt.Errorf("%s: plugin %q has no kv permission", fn, p.name))
	}
}

func (p *Plugin) hostBytes(ctx context.Context, cp *extism.CurrentPlugin, fn string, offs uint64) []byte {
	if offs == 0 {
		return nil // the guest's way of passing an empty block
	}
	b, err := cp.ReadBytes(offs)
	if err != nil {
		p.hostFail(ctx, fmt.Errorf("%s: read argument: %w", fn, err))
	}
	if int64(len(b)) > p.perms.MaxInput {
		p.hostFail(ctx, fmt.Errorf("%s: argument %s exceeds max_input %s", fn, formatSize(int64(len(b))), formatSize(p.perms.MaxInput)))
	}
	return b
}

func (p *Plugin) hostString(ctx context.Context, cp *extism.CurrentPlugin, fn string, offs uint64) string {
	return string(p.hostBytes(ctx, cp, fn, offs))
}

func (p *Plugin) hostWrite(ctx context.Context, cp *extism.CurrentPlugin, fn string, b []byte) uint64 {
	if len(b) == 0 {
		// The kernel has no empty blocks; 0 is how Extism says "nothing".
		return 0
	}
	offs, err := cp.WriteBytes(b)
	if err != nil {
		p.hostFail(ctx, fmt.Errorf("%s: write result: %w", fn, err))
	}
	return offs
}

// hostFail ends the call from inside a host function. The reason is kept in
// the call state so the result says it verbatim rather than wazero's wrapped
// panic text.
func (p *Plugin) hostFail(ctx context.Context, err error) {
	if st, ok := ctx.Value(callStateKey{}).(*callState); ok {
		st.setFault(err)
	}
	panic(err)
}

func (p *Plugin) host() Host {
	if p.hostImpl == nil {
		return refusingHost{}
	}
	return p.hostImpl
}

// refusingHost is the Host of a plugin loaded without one.
type refusingHost struct{}

var errNoHost = errors.New("no host is attached to this sandbox")

func (refusingHost) CreateMessage(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errNoHost
}
func (refusingHost) Notify(context.Context, string, string, json.RawMessage) {}
func (refusingHost) KVGet(context.Context, string, string) ([]byte, bool, error) {
	return nil, false, errNoHost
}
func (refusingHost) KVSet(context.Context, string, string, []byte) error { return errNoHost }
func (refusingHost) KVDelete(context.Context, string, string) error      { return errNoHost }
