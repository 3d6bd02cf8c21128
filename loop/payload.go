package loop

// Event payloads (docs/loop.md#events): an event's Data is a pointer to its payload
// struct. Boxing a struct value into an interface allocates it on the heap, one
// allocation an event; boxing a pointer allocates nothing. So a run cuts the payloads of
// the events it emits most from blocks of its own: the first ones from the block its
// first events are stored in, then from chunks of payloadChunk. A payload is handed out
// once and never written again, so an event kept by a consumer or a store stays valid
// for as long as it is kept; a later run takes new blocks, never this run's.

// slots hands out a run's payloads of one type. Only the run's goroutine uses it (plugin
// reports from tool goroutines bring their own payload).
type slots[T any] struct{ free []T }

// payloadChunk is how many payloads of one type a run takes at once once its first
// block's are used up (a long stream's deltas, a run of many steps).
const payloadChunk = 16

// put stores v in the next free payload and returns it.
func (s *slots[T]) put(v T) *T {
	if len(s.free) == 0 {
		s.free = make([]T, payloadChunk)
	}
	p := &s.free[0]
	*p = v
	s.free = s.free[1:]
	return p
}

// payloads are a run's slots, one per event type the loop emits on every run.
type payloads struct {
	runStarted slots[RunStartedData]
	status     slots[StatusData]
	delta      slots[ModelDeltaData]
	text       slots[TextData]
	assistant  slots[AssistantMessageData]
	usage      slots[Usage]
	stepStart  slots[StepStartData]
	toolCall   slots[ToolCallData]
	toolResult slots[ToolResultData]
	stepDone   slots[StepCompleteData]
	final      slots[FinalData]
	finished   slots[RunFinishedData]
}

// eventBlock is a run's first allocation for its events: the slab its first stored
// events are written in (journal.pending), the entries its first writes hand the store
// (journal.entrySlab: its events and messages) and the payloads of a one-step run (20
// events: run_started, five statuses, four deltas, two assistant messages and their
// usage, step_start, tool_call, tool_result, step_complete, final and run_finished).
// The stores keep the events they are handed, and so this block; payloads cut from it
// live as long as the events that point to them.
type eventBlock struct {
	events     [eventSlabSize]Event
	pl         payloads             // the slots, here rather than in the run: the block has room for them
	entries    [entrySlabSize]Entry // the entries of the run's first writes (journal.entrySlab)
	runStarted [1]RunStartedData
	status     [5]StatusData
	delta      [4]ModelDeltaData
	assistant  [2]AssistantMessageData
	usage      [2]Usage
	stepStart  [1]StepStartData
	toolCall   [1]ToolCallData
	toolResult [1]ToolResultData
	stepDone   [1]StepCompleteData
	final      [1]FinalData
	finished   [1]RunFinishedData
}

// newEventBlock gives the journal its first event slab and payloads. It runs before the
// run's first emit, so plugin reports (which append to pending under the journal's lock)
// never see it change.
func (j *journal) newEventBlock() {
	b := new(eventBlock)
	j.pending, j.entrySlab = b.events[:0], b.entries[:0]
	p := &b.pl
	j.pl = p
	p.runStarted.free, p.status.free, p.delta.free = b.runStarted[:], b.status[:], b.delta[:]
	p.assistant.free, p.usage.free, p.stepStart.free = b.assistant[:], b.usage[:], b.stepStart[:]
	p.toolCall.free, p.toolResult.free, p.stepDone.free = b.toolCall[:], b.toolResult[:], b.stepDone[:]
	p.final.free, p.finished.free = b.final[:], b.finished[:]
}
