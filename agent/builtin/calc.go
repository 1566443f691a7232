package builtin

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Eval evaluates an arithmetic expression: numbers with optional decimals,
// + - * /, unary minus and plus, and parentheses, with the usual
// precedence. It returns an error naming the position of bad input, and for
// division by zero or a result too large to represent.
func Eval(expr string) (float64, error) {
	p := &parser{s: expr}
	p.skip()
	if p.pos == len(p.s) {
		return 0, fmt.Errorf("empty expression")
	}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	if p.pos != len(p.s) {
		return 0, p.errorf("unexpected %q", p.s[p.pos])
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("the result is too large")
	}
	return v, nil
}

// Format writes a number the way a person reads it: whole numbers without
// a decimal point, others with at most 12 significant digits.
func Format(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 12, 64)
}

// maxDepth bounds nested parentheses and unary signs, so no input exhausts the stack.
const maxDepth = 200

type parser struct {
	s     string
	pos   int
	depth int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("at position %d: %s", p.pos+1, fmt.Sprintf(format, args...))
}

func (p *parser) skip() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// sum = product { ("+" | "-") product }
func (p *parser) sum() (float64, error) {
	v, err := p.product()
	if err != nil {
		return 0, err
	}
	for p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
		op := p.s[p.pos]
		p.pos++
		p.skip()
		w, err := p.product()
		if err != nil {
			return 0, err
		}
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return v, nil
}

// product = unary { ("*" | "/") unary }
func (p *parser) product() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for p.pos < len(p.s) && (p.s[p.pos] == '*' || p.s[p.pos] == '/') {
		op, at := p.s[p.pos], p.pos
		p.pos++
		p.skip()
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		if op == '*' {
			v *= w
		} else {
			if w == 0 {
				p.pos = at
				return 0, p.errorf("division by zero")
			}
			v /= w
		}
	}
	return v, nil
}

// unary = ("-" | "+") unary | primary
func (p *parser) unary() (float64, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return 0, p.errorf("expression nested too deeply")
	}
	if p.pos < len(p.s) && (p.s[p.pos] == '-' || p.s[p.pos] == '+') {
		neg := p.s[p.pos] == '-'
		p.pos++
		p.skip()
		v, err := p.unary()
		if neg {
			v = -v
		}
		return v, err
	}
	return p.primary()
}

// primary = number | "(" sum ")"
func (p *parser) primary() (float64, error) {
	if p.pos >= len(p.s) {
		return 0, p.errorf("the expression ends where a number belongs")
	}
	if p.s[p.pos] == '(' {
		p.pos++
		p.skip()
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return 0, p.errorf("missing )")
		}
		p.pos++
		p.skip()
		return v, nil
	}
	start, dot := p.pos, false
	for p.pos < len(p.s) && (isDigit(p.s[p.pos]) || p.s[p.pos] == '.' && !dot) {
		dot = dot || p.s[p.pos] == '.'
		p.pos++
	}
	num := p.s[start:p.pos]
	if num == "" || num == "." {
		p.pos = start
		return 0, p.errorf("unexpected %q where a number belongs", p.s[p.pos])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		p.pos = start
		return 0, p.errorf("bad number %q", num)
	}
	p.skip()
	return v, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
