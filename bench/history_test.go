package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/bench/fake"
	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store"
	"github.com/agenthost/agenthost/store/pgtest"
	"github.com/agenthost/agenthost/store/postgres"
)

// BenchmarkRunHistory is the run start vs history row: one op is the one-step run of
// BenchmarkLoopStep (fake.Model, the "add" tool) on a session that already holds 9, 81
// or 801 messages (the system prompt and 2, 20 or 200 earlier one-step runs, each with
// the 16 events a run stores: 80% of the entries are events). Each op gets a session of
// its own, written before the op with the timer stopped (the earlier runs' entries,
// renumbered, in one append) and deleted after it, so every op starts from the same
// history on a store of the same size. Every op writes as much before its run: the 9-
// and 81-message ops write the rest of the 801-message op's 200 runs into a filler
// session (deleted with the op's), so the three runs differ by their history alone and
// not by the state a bulk write leaves the store in (SQLite's log and page cache: a
// 9-message run right after 4,000 entries were appended costs ~40% more than after 40).
// cpu-ns/op counts the process's CPU during the runs only. A run that loads only what
// it needs costs about the same at 801 messages as at 9.
//
// Two starts: a turn of a chat (the session's previous turn, the last of the earlier
// runs, ran in this process just before, as in a chat on `serve`: the store read the
// rest then and reads only what that turn added), and, with "-cold", the first run
// on the session since the process started (the store reads the whole transcript).
func BenchmarkRunHistory(b *testing.B) {
	for _, backend := range []string{"memory", "sqlite", "postgres", "sqlite-cold", "postgres-cold"} {
		b.Run(backend, func(b *testing.B) {
			kind, cold := strings.CutSuffix(backend, "-cold")
			st := historyStore(b, kind)
			tmpl := runTemplate(b)
			for _, msgs := range []int{9, 81, 801} {
				b.Run(fmt.Sprintf("messages=%d", msgs), func(b *testing.B) {
					benchHistory(b, st, tmpl, (msgs-1)/4, !cold)
				})
			}
		})
	}
}

func historyStore(b *testing.B, backend string) loop.SessionStore {
	switch backend {
	case "sqlite":
		s, err := store.OpenSQLite(filepath.Join(b.TempDir(), "sessions.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	case "postgres":
		s, err := postgres.Open(context.Background(), pgtest.Start(b).NewDatabase(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	return loop.NewMemoryStore()
}

// runTemplate is what a session of one one-step run holds: its system entry and the
// run's entries.
func runTemplate(b *testing.B) []loop.Entry {
	st := loop.NewMemoryStore()
	a, err := fake.Agent(fake.Model{}, st)
	if err != nil {
		b.Fatal(err)
	}
	res, err := a.Run(context.Background(), loop.RunInput{SessionID: "t", Messages: []loop.Message{loop.UserMessage("2+3?")}})
	if err != nil || res.Final == nil {
		b.Fatalf("template run: %v %+v", err, res)
	}
	es, err := st.Load(context.Background(), "t")
	if err != nil || len(es) < 2 || es[0].Kind != loop.EntryMessage {
		b.Fatalf("template: %d entries, %v", len(es), err)
	}
	return es
}

// history is session's entries after runs one-step runs: the template's system entry,
// then its run's entries again and again, their seqs, event seqs and run ids renumbered.
func history(session string, tmpl []loop.Entry, runs int) []loop.Entry {
	var out []loop.Entry
	var evSeq int64
	for _, e := range tmpl {
		if e.RunID != tmpl[1].RunID || e.Kind == loop.EntryMessage && e.Message.Role == loop.RoleSystem {
			e.Seq = int64(len(out) + 1)
			out = append(out, e)
		}
	}
	for r := range runs {
		runID := fmt.Sprintf("run-%d", r)
		for _, e := range tmpl {
			if e.Kind == loop.EntryMessage && e.Message.Role == loop.RoleSystem {
				continue
			}
			e.Seq, e.RunID = int64(len(out)+1), runID
			if e.Event != nil {
				ev := *e.Event
				evSeq++
				ev.Seq, ev.RunID, ev.SessionID = evSeq, runID, session
				e.Event = &ev
			}
			out = append(out, e)
		}
	}
	return out
}

// historyMaxRuns is the earlier runs of the longest history (801 messages), which every
// op writes before its run (its own and a filler session's).
const historyMaxRuns = 200

func benchHistory(b *testing.B, st loop.SessionStore, tmpl []loop.Entry, runs int, chat bool) {
	a, err := fake.Agent(fake.Model{}, st)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var cpu int64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		session, filler := fmt.Sprintf("h%d-%d", runs, i), fmt.Sprintf("f%d-%d", runs, i)
		in := loop.RunInput{SessionID: session, Messages: []loop.Message{loop.UserMessage("2+3?")}}
		if fill := historyMaxRuns - runs; fill > 0 {
			if err := st.Append(ctx, filler, history(filler, tmpl, fill)...); err != nil {
				b.Fatal(err)
			}
		}
		earlier := runs
		if chat {
			earlier-- // the last one is the previous turn, run here
		}
		if err := st.Append(ctx, session, history(session, tmpl, earlier)...); err != nil {
			b.Fatal(err)
		}
		if chat {
			if res, err := a.Run(ctx, in); err != nil || res.Final == nil {
				b.Fatalf("previous turn: %v %+v", err, res)
			}
		}
		runtime.GC() // the setup's garbage is not the run's to collect
		b.StartTimer()
		c0 := fake.ProcessCPU()
		res, err := a.Run(ctx, in)
		cpu += fake.ProcessCPU() - c0
		b.StopTimer()
		if err != nil || res.Final == nil || res.Final.Text() != fake.Answer {
			b.Fatalf("run: %v %+v", err, res)
		}
		// Gone again, so the store (and the heap the memory store is) does not grow
		// with the ops.
		for _, s := range []string{session, filler} {
			if err := st.(loop.SessionDeleter).DeleteSession(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
