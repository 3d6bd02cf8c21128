package providers

import (
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// validUTF8 replaces invalid UTF-8 in every string field of msg, in place, with
// U+FFFD. Protobuf refuses to marshal a string field that is not UTF-8, and a prompt
// or a tool's output can hold any bytes: replacing them at the process boundary keeps
// the run going instead of failing every attempt of the call. It reports whether it
// changed anything.
func validUTF8(msg proto.Message) bool {
	return fixMessage(msg.ProtoReflect())
}

// requestValidUTF8 reports whether every string of req is valid UTF-8, reading the
// fields directly: the reflective walk of validUTF8 costs microseconds a call, on every
// call, for the rare request that needs it. It must name every string field of
// ChatRequest and of the messages it holds; a test enumerates them by reflection
// (TestRequestValidUTF8ChecksEveryStringField), so a field added to the protocol and
// not here fails it.
func requestValidUTF8(r *ChatRequest) bool {
	if !allValid(r.GetModel(), r.GetToolChoice(), r.GetResponseFormat(), r.GetMetadata().GetSession(), r.GetMetadata().GetRun(),
		r.GetPromptCache().GetKey()) {
		return false
	}
	for k, v := range r.GetMetadata().GetExtra() { // the run's --meta: any bytes a caller sent
		if !allValid(k, v) {
			return false
		}
	}
	for _, m := range r.GetMessages() {
		if !messageValidUTF8(m) {
			return false
		}
	}
	for _, t := range r.GetTools() {
		if !allValid(t.GetName(), t.GetDescription(), t.GetInputSchema()) {
			return false
		}
	}
	return true
}

func messageValidUTF8(m *Message) bool {
	if !allValid(m.GetRole(), m.GetToolCallId(), m.GetName(), m.GetReasoning(), m.GetReasoningState()) {
		return false
	}
	for _, p := range m.GetContent() {
		if !allValid(p.GetType(), p.GetText(), p.GetImageUrl(), p.GetMediaType(), p.GetName()) {
			return false
		}
	}
	for _, tc := range m.GetToolCalls() {
		if !allValid(tc.GetId(), tc.GetName(), tc.GetArguments()) {
			return false
		}
	}
	return true
}

func allValid(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

func fixMessage(m protoreflect.Message) bool {
	changed := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if nv, ok := fixValue(fd, l.Get(i)); ok {
					l.Set(i, nv)
					changed = true
				}
			}
		case fd.IsMap():
			mp := v.Map()
			type kv struct {
				k protoreflect.MapKey
				v protoreflect.Value
			}
			var fixes []kv
			var bad []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key, keyFixed := k, false
				if s, ok := k.Interface().(string); ok && !utf8.ValidString(s) {
					bad = append(bad, k)
					key, keyFixed = protoreflect.ValueOfString(strings.ToValidUTF8(s, "\uFFFD")).MapKey(), true
				}
				nv, ok := fixValue(fd.MapValue(), mv)
				if ok || keyFixed {
					fixes = append(fixes, kv{key, nv})
				}
				return true
			})
			for _, k := range bad {
				mp.Clear(k)
			}
			for _, f := range fixes {
				mp.Set(f.k, f.v)
			}
			changed = changed || len(fixes) > 0
		default:
			if nv, ok := fixValue(fd, v); ok {
				m.Set(fd, nv)
				changed = true
			}
		}
		return true
	})
	return changed
}

// fixValue returns the repaired value of one string or message, and whether it
// changed (a message is repaired in place).
func fixValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if s := v.String(); !utf8.ValidString(s) {
			return protoreflect.ValueOfString(strings.ToValidUTF8(s, "\uFFFD")), true
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if fixMessage(v.Message()) {
			return v, true
		}
	}
	return v, false
}
