package loop

// TextFilter is Config.OutputFilter's filter of one streamed text: Write takes the next
// piece and returns what may be sent of the text so far (it may hold back a tail it
// cannot judge yet), Flush returns the rest. A filter is used by one goroutine, for one
// text.
type TextFilter interface {
	Write(piece string) string
	Flush() string
}

// outFilter filters what a run sends its clients of the model's words (Config.
// OutputFilter): the text and reasoning deltas of the call being streamed, each through
// a filter of its own, and the text, reasoning and assistant_message events.
type outFilter struct {
	make      func() TextFilter
	call      int        // the call index the filters are of
	text, rsn TextFilter // nil: nothing written yet
	last      DeltaKind  // the kind of the last delta relayed
}

// delta filters a text or reasoning delta of call ci before it is emitted; "" is
// nothing to send yet. A delta of another kind than the last sends what the filters
// held first, so that clients get the answer's parts in the order the model wrote them.
func (r *run) filterDelta(ci int, d Delta, text string) string {
	o := r.out
	if o.call != ci { // a new call: what the last one held was sent when it finished
		o.call, o.text, o.rsn = ci, nil, nil
	}
	if d.Kind != o.last {
		r.flushDeltas(ci, d.Kind)
		o.last = d.Kind
	}
	switch d.Kind {
	case DeltaText:
		if o.text == nil {
			o.text = o.make()
		}
		return o.text.Write(text)
	case DeltaReasoning:
		if o.rsn == nil {
			o.rsn = o.make()
		}
		return o.rsn.Write(text)
	}
	return text
}

// flushDeltas emits, as deltas of call ci, what the filters of kinds other than keep
// hold ("": all of them). Attempts of one call share its filters (a retried stream
// resumes after the deltas clients saw, L14), so they are flushed once the call's
// stream is complete, or when another kind of delta follows.
func (r *run) flushDeltas(ci int, keep DeltaKind) {
	o := r.out
	if o == nil || o.call != ci {
		return
	}
	if keep != DeltaText && o.text != nil {
		if s := o.text.Flush(); s != "" {
			r.emitDelta(ci, Delta{Kind: DeltaText}, s, ToolCallRef{})
		}
	}
	if keep != DeltaReasoning && o.rsn != nil {
		if s := o.rsn.Flush(); s != "" {
			r.emitDelta(ci, Delta{Kind: DeltaReasoning}, s, ToolCallRef{})
		}
	}
}

// filtered is s through a filter of its own: what an event carries of the model's words.
func (r *run) filtered(s string) string {
	if r.out == nil || s == "" {
		return s
	}
	f := r.out.make()
	return f.Write(s) + f.Flush()
}

// forClients is msg as the assistant_message event carries it: its text parts and
// reasoning filtered, in a copy (the run and its store keep msg as the model wrote it).
func (r *run) forClients(msg Message) Message {
	if r.out == nil {
		return msg
	}
	parts := make([]Part, len(msg.Content))
	for i, p := range msg.Content {
		if p.Type == PartText {
			p.Text = r.filtered(p.Text)
		}
		parts[i] = p
	}
	msg.Content = parts
	msg.Reasoning = r.filtered(msg.Reasoning)
	return msg
}
