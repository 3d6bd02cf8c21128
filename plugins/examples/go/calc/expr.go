//go:build wasip1

package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// A recursive-descent evaluator:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = "-" unary | "+" unary | primary
//	primary = number | "(" expr ")"
//
// Positions in errors count characters from 1.

type parser struct {
	src []rune
	pos int // index of the next rune
}

func evaluate(src string) (float64, error) {
	p := &parser{src: []rune(src)}
	p.skipSpace()
	if p.pos == len(p.src) {
		return 0, errors.New("empty expression")
	}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if p.pos < len(p.src) {
		return 0, p.unexpected()
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("result is not a finite number")
	}
	return v, nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
}

func (p *parser) unexpected() error {
	if p.pos >= len(p.src) {
		return errors.New("unexpected end of expression")
	}
	return fmt.Errorf("unexpected %q at position %d", string(p.src[p.pos]), p.pos+1)
}

// next returns the next non-space rune without consuming it, or 0 at the end.
func (p *parser) next() rune {
	p.skipSpace()
	if p.pos == len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *parser) expr() (float64, error) {
	v, err := p.term()
	for err == nil {
		op := p.next()
		if op != '+' && op != '-' {
			return v, nil
		}
		p.pos++
		var r float64
		if r, err = p.term(); op == '+' {
			v += r
		} else {
			v -= r
		}
	}
	return 0, err
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	for err == nil {
		op := p.next()
		if op != '*' && op != '/' {
			return v, nil
		}
		p.pos++
		var r float64
		if r, err = p.unary(); err != nil {
			break
		}
		if op == '*' {
			v *= r
		} else if r == 0 {
			return 0, errors.New("division by zero")
		} else {
			v /= r
		}
	}
	return 0, err
}

func (p *parser) unary() (float64, error) {
	switch p.next() {
	case '-':
		p.pos++
		v, err := p.unary()
		return -v, err
	case '+':
		p.pos++
		return p.unary()
	}
	return p.primary()
}

func (p *parser) primary() (float64, error) {
	c := p.next()
	switch {
	case c == '(':
		open := p.pos
		p.pos++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if p.next() != ')' {
			if p.pos == len(p.src) {
				return 0, fmt.Errorf("missing \")\" for \"(\" at position %d", open+1)
			}
			return 0, p.unexpected()
		}
		p.pos++
		return v, nil
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	}
	return 0, p.unexpected()
}

func (p *parser) number() (float64, error) {
	start := p.pos
	for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] == '.') {
		p.pos++
	}
	text := string(p.src[start:p.pos])
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || text == "." {
		return 0, fmt.Errorf("invalid number %q at position %d", text, start+1)
	}
	return v, nil
}

// formatNumber prints at most 15 significant digits, without exponent, so
// 0.1+0.2 is "0.3" and 2/4 is "0.5".
func formatNumber(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
