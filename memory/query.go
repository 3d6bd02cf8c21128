package memory

import (
	"strings"
	"unicode"
)

// MaxTerms bounds the words a search uses: a whole pasted document as the query would
// otherwise become a query of thousands of terms.
const MaxTerms = 32

// Terms is the words a search matches: runs of letters and digits, lower-cased, each
// once, in order, at most MaxTerms. Everything else (quotes, operators, parentheses,
// column filters, NEAR, *) separates words, so no text reaches a full-text engine as
// syntax: both stores build their query from Terms alone.
func Terms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		w = strings.ToLower(w)
		if len(w) < 2 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == MaxTerms {
			break
		}
	}
	return out
}

// Words is every word of text as Terms folds words (letters and digits, lower-cased, at
// least two characters, no stop words), repeats kept and uncapped: what an encrypted
// store indexes for a memory (store/seal), where the engine cannot read the text.
func Words(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		w = strings.ToLower(w)
		if len(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// FTS5Query is Terms as an SQLite FTS5 query: each term a quoted string, any may match.
// Terms hold letters and digits only, so the quoting cannot be escaped.
func FTS5Query(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + t + `"`
	}
	return strings.Join(q, " OR ")
}

// TSQuery is Terms as a PostgreSQL to_tsquery text: any term may match.
func TSQuery(terms []string) string { return strings.Join(terms, " | ") }

// stopWords are English words too common to say anything about what a memory is about.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the a an and or but of to in on at for with is are was were be been am
		i me my you your we our it its this that these those do does did what which who how when where why
		can could would should will shall have has had not no yes so if then than there here as by from
		about into please tell know remember`) {
		stopWords[w] = true
	}
}
