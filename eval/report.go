package eval

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// Report is a dataset's results: what `agenthost eval --json` prints and --baseline reads.
type Report struct {
	Dataset  string   `json:"dataset"`
	Cases    []Result `json:"cases"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	PassRate float64  `json:"pass_rate"`
	CostUSD  float64  `json:"cost_usd"`
	// MeanMS is the cases' mean duration.
	MeanMS float64 `json:"mean_ms"`
	// Regressions are what a baseline comparison found (Compare).
	Regressions []string `json:"regressions,omitempty"`
}

func newReport(dataset string, results []Result) *Report {
	r := &Report{Dataset: dataset, Cases: results}
	var ms int64
	for _, c := range results {
		if c.Pass {
			r.Passed++
		} else {
			r.Failed++
		}
		r.CostUSD += c.CostUSD
		ms += c.DurationMS
	}
	if n := len(results); n > 0 {
		r.PassRate = float64(r.Passed) / float64(n)
		r.MeanMS = float64(ms) / float64(n)
	}
	return r
}

// Tolerance is how much worse than a baseline a run may be before Compare calls it a
// regression: cost and mean duration as fractions (0.2 = 20% more).
type Tolerance struct {
	Cost, Latency float64
}

// Compare records in r the regressions against a baseline: a lower pass rate, each case
// that passed there and fails here, cost or mean duration over the tolerance.
func (r *Report) Compare(base *Report, tol Tolerance) {
	if r.PassRate < base.PassRate {
		r.Regressions = append(r.Regressions, fmt.Sprintf("pass rate %.1f%%, baseline %.1f%%", 100*r.PassRate, 100*base.PassRate))
	}
	passed := map[string]bool{}
	for _, c := range base.Cases {
		passed[c.ID] = c.Pass
	}
	for _, c := range r.Cases {
		if !c.Pass && passed[c.ID] {
			r.Regressions = append(r.Regressions, fmt.Sprintf("case %s passed in the baseline and fails now", c.ID))
		}
	}
	if base.CostUSD > 0 && r.CostUSD > base.CostUSD*(1+tol.Cost) {
		r.Regressions = append(r.Regressions, fmt.Sprintf("cost $%.6f, baseline $%.6f (+%.0f%%, tolerance %.0f%%)",
			r.CostUSD, base.CostUSD, 100*(r.CostUSD/base.CostUSD-1), 100*tol.Cost))
	}
	if base.MeanMS > 0 && r.MeanMS > base.MeanMS*(1+tol.Latency) {
		r.Regressions = append(r.Regressions, fmt.Sprintf("mean duration %.0f ms, baseline %.0f ms (+%.0f%%, tolerance %.0f%%)",
			r.MeanMS, base.MeanMS, 100*(r.MeanMS/base.MeanMS-1), 100*tol.Latency))
	}
}

// LoadReport reads a report --json wrote.
func LoadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a report of agenthost eval --json: %w", path, err)
	}
	return &r, nil
}

// WriteTable writes the results as a table and a summary line.
func (r *Report) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tSTATUS\tCOST\tTIME\tWHY")
	for _, c := range r.Cases {
		res, why := "pass", ""
		if !c.Pass {
			res, why = "FAIL", c.Failures[0]
			if n := len(c.Failures); n > 1 {
				why += fmt.Sprintf(" (+%d more)", n-1)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t$%.4f\t%d ms\t%s\n", c.ID, res, c.Outcome.Status, c.CostUSD, c.DurationMS, oneLine(why))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d/%d passed (%.1f%%), cost $%.4f, mean %.0f ms\n", r.Passed, len(r.Cases), 100*r.PassRate, r.CostUSD, r.MeanMS)
	for _, g := range r.Regressions {
		fmt.Fprintf(w, "regression: %s\n", g)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// junit is the JUnit XML CI systems read.
type (
	junitSuite struct {
		XMLName  xml.Name    `xml:"testsuite"`
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Time     float64     `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      float64       `xml:"time,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		Output    string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes the results as JUnit XML: a suite named after the dataset, a test
// case per case, a failure per failed case (its reasons, and a regression as a failed
// case of its own so CI fails on it too).
func (r *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: r.Dataset, Tests: len(r.Cases), Failures: r.Failed}
	for _, c := range r.Cases {
		jc := junitCase{Name: c.ID, Classname: r.Dataset, Time: float64(c.DurationMS) / 1000, Output: c.Outcome.Final}
		if !c.Pass {
			jc.Failure = &junitFailure{Message: oneLine(c.Failures[0]), Text: strings.Join(c.Failures, "\n")}
		}
		s.Time += jc.Time
		s.Cases = append(s.Cases, jc)
	}
	for i, g := range r.Regressions {
		s.Tests++
		s.Failures++
		s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("regression %d", i+1), Classname: r.Dataset + ".baseline",
			Failure: &junitFailure{Message: g, Text: g}})
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Failing reports whether the eval should exit 1: a case failed or a regression.
func (r *Report) Failing() bool { return r.Failed > 0 || len(r.Regressions) > 0 }
