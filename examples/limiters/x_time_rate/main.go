// Command x_time_rate is a ratelab exec adapter (docs/book/src/protocol.md) around
// the real golang.org/x/time/rate: one rate.Limiter per key, each request
// decided by AllowN(time.Unix(0, t), w) at its virtual time t.
//
// Policy: rate = limit / interval and burst = limit, as the decision lab's
// token_bucket model; the entry's params may override them with
// rate_per_s=<float> and burst=<int>.
//
// Build offline against Debian's golang-golang-x-time-dev (GOPATH mode):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=/tmp/gocache \
//	  go build -o /tmp/x_time_rate examples/limiters/x_time_rate/main.go
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

const protocol = "ratelab-exec 1"

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "x_time_rate: "+format+"\n", a...)
	os.Exit(2)
}

// secondsF64 is interval_ns in seconds computed as Rust's
// Duration::as_secs_f64 does (whole seconds plus the fraction), so the
// default rate is the same float64 as the lab's token_bucket model.
func secondsF64(ns int64) float64 {
	return float64(ns/1e9) + float64(ns%1e9)/1e9
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	hello, err := in.ReadString('\n')
	if err != nil {
		fail("no hello: %v", err)
	}
	words := strings.Fields(hello)
	if len(words) < 3 || words[0]+" "+words[1] != protocol || words[2] != "limiter" {
		fail("not a limiter hello: %q", hello)
	}
	fields := map[string]string{}
	for _, w := range words[3:] {
		if i := strings.IndexByte(w, '='); i > 0 {
			fields[w[:i]] = w[i+1:]
		}
	}
	limit, err := strconv.ParseInt(fields["limit"], 10, 64)
	if err != nil {
		fail("limit: %v", err)
	}
	intervalNs, err := strconv.ParseInt(fields["interval_ns"], 10, 64)
	if err != nil {
		fail("interval_ns: %v", err)
	}
	r := rate.Limit(float64(limit) / secondsF64(intervalNs))
	if v, ok := fields["rate_per_s"]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			fail("rate_per_s: %v", err)
		}
		r = rate.Limit(f)
	}
	burst := int(limit)
	if v, ok := fields["burst"]; ok {
		b, err := strconv.Atoi(v)
		if err != nil {
			fail("burst: %v", err)
		}
		burst = b
	}
	// A Limiter is a mutex, a float64 limit, an int burst, a float64
	// tokens and two time.Time (24 bytes each): 80 bytes on amd64.
	fmt.Fprintf(out, "%s ok state_bytes=80\n", protocol)
	out.Flush()

	var lims []*rate.Limiter
	var res []byte
	for {
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A batch line longer than the buffer: gather it whole.
			buf := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = in.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if err != nil && err != io.EOF {
			fail("reading: %v", err)
		}
		p := parser{b: line}
		word := p.word()
		switch word {
		case "end", "":
			if err == io.EOF || word == "end" {
				return
			}
			continue
		case "batch":
		default:
			fail("unexpected line starting %q", word)
		}
		p.int() // seq
		n := p.int()
		res = res[:0]
		for i := int64(0); i < n; i++ {
			t, k, w := p.int(), p.int(), p.int()
			for int64(len(lims)) <= k {
				lims = append(lims, nil)
			}
			l := lims[k]
			if l == nil {
				l = rate.NewLimiter(r, burst)
				lims[k] = l
			}
			if i > 0 {
				res = append(res, ' ')
			}
			if l.AllowN(time.Unix(0, t), int(w)) {
				res = append(res, '1')
			} else {
				res = append(res, '0')
			}
		}
		if p.bad {
			fail("malformed batch line")
		}
		res = append(res, '\n')
		out.Write(res)
		out.Flush()
	}
}

// parser reads space-separated words and whole numbers from one line.
type parser struct {
	b   []byte
	i   int
	bad bool
}

func (p *parser) skip() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

func (p *parser) word() string {
	p.skip()
	s := p.i
	for p.i < len(p.b) && p.b[p.i] != ' ' && p.b[p.i] != '\r' && p.b[p.i] != '\n' {
		p.i++
	}
	return string(p.b[s:p.i])
}

func (p *parser) int() int64 {
	p.skip()
	s := p.i
	var v int64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		v = v*10 + int64(p.b[p.i]-'0')
		p.i++
	}
	if p.i == s {
		p.bad = true
	}
	return v
}
