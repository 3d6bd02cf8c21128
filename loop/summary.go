package loop

import "strings"

// SessionSummary is what a person sees of a session in a list: its title (the first
// prompt, shortened), how its last run ended, and what all its runs cost.
type SessionSummary struct {
	Title      string  `json:"title"`
	LastStatus Status  `json:"last_status,omitempty"`
	CostUSD    float64 `json:"cost_usd"`
	// Text is every message's text, for searching; not encoded.
	Text string `json:"-"`
}

// Summarize reads a session's entries into its summary. titleLen bounds the title in
// runes (0: 48).
func Summarize(entries []Entry, titleLen int) SessionSummary {
	if titleLen <= 0 {
		titleLen = 48
	}
	var s SessionSummary
	var text strings.Builder
	for _, e := range entries {
		switch {
		case e.Kind == EntryMessage && e.Message != nil:
			t := e.Message.Text()
			if e.Message.Role == RoleUser && s.Title == "" {
				s.Title = shorten(t, titleLen)
			}
			text.WriteString(t)
			text.WriteByte('\n')
		case e.Kind == EntryEvent && e.Event != nil && e.Event.Type == EventRunFinished:
			if d, ok := e.Event.Data.(*RunFinishedData); ok {
				s.LastStatus = d.Status
				s.CostUSD += d.Usage.CostUSD
			}
		}
	}
	s.Text = text.String()
	return s
}

// shorten folds whitespace and cuts s to n runes, marking a cut with "…".
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
