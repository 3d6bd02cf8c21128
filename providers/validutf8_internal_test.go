package providers

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// populate sets every string field reachable from m (through message fields, one
// element of each repeated field and one entry of each map of strings) to "ok", except the target-th one (counting from 1),
// which gets invalid UTF-8; it returns how many string fields it saw.
func populate(t *testing.T, m protoreflect.Message, target int, seen *int, depth int) {
	t.Helper()
	if depth > 8 {
		t.Fatalf("%s: message nesting too deep", m.Descriptor().FullName())
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		str := func() protoreflect.Value {
			*seen++
			if *seen == target {
				return protoreflect.ValueOfString("bad \xff")
			}
			return protoreflect.ValueOfString("ok")
		}
		if fd.IsMap() { // one entry: its key and its value are two string fields
			if fd.MapKey().Kind() != protoreflect.StringKind || fd.MapValue().Kind() != protoreflect.StringKind {
				t.Fatalf("%s: a map field not of strings; teach requestValidUTF8 and this test about it", fd.FullName())
			}
			k := str()
			m.Mutable(fd).Map().Set(k.MapKey(), str())
			continue
		}
		switch {
		case fd.Kind() == protoreflect.StringKind && fd.IsList():
			m.Mutable(fd).List().Append(str())
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, str())
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := m.Mutable(fd).List()
			e := l.NewElement()
			populate(t, e.Message(), target, seen, depth+1)
			l.Append(e)
		case fd.Kind() == protoreflect.MessageKind:
			populate(t, m.Mutable(fd).Message(), target, seen, depth+1)
		}
	}
}

// The fast check that spares a call the reflective walk must see every string field of
// a request: each one in turn made invalid, it says so; all valid, it says so.
func TestRequestValidUTF8ChecksEveryStringField(t *testing.T) {
	var n int
	all := &ChatRequest{}
	populate(t, all.ProtoReflect(), -1, &n, 0)
	if !requestValidUTF8(all) {
		t.Fatal("a request with every string valid is reported invalid")
	}
	if n < 20 {
		t.Fatalf("only %d string fields found", n)
	}
	for target := 1; target <= n; target++ {
		req, seen := &ChatRequest{}, 0
		populate(t, req.ProtoReflect(), target, &seen, 0)
		if requestValidUTF8(req) {
			t.Errorf("string field %d of %d holds invalid UTF-8, and requestValidUTF8 does not see it: %v", target, n, req)
		}
		if !validUTF8(req) || !requestValidUTF8(req) {
			t.Errorf("string field %d: validUTF8 did not repair it", target)
		}
	}
}
