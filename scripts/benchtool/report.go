package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// results maps a key to its samples by run number, as recorded by
// bench.sh: one "KEY RUN VALUE" line per sample.
type results map[string]map[int]float64

func readResults(path string) (results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res := results{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		run, err1 := strconv.Atoi(fs[1])
		v, err2 := strconv.ParseFloat(fs[2], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		if res[fs[0]] == nil {
			res[fs[0]] = map[int]float64{}
		}
		res[fs[0]][run] = v
	}
	return res, sc.Err()
}

// samples of key, or of num/den pair by pair (runs where both exist).
func (r results) samples(key, num, den string) []float64 {
	var out []float64
	if key != "" {
		for _, v := range r[key] {
			out = append(out, v)
		}
	} else {
		for run, n := range r[num] {
			if d, ok := r[den][run]; ok && d != 0 {
				out = append(out, n/d)
			}
		}
	}
	slices.Sort(out)
	return out
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// row is one line of the table: a figure (key) or a ratio (num/den)
// measured in the same run, with its bar.
type row struct {
	label    string
	key      string
	num, den string
	unit     string
	scale    float64 // display = value*scale
	digits   int
	op       string  // "", ">=", "<", "<="
	bar      float64 // in display units
}

func (r row) display(v float64) string {
	v *= r.scale
	switch {
	case math.IsNaN(v):
		return "–"
	case r.digits < 0:
		return humanize(v)
	default:
		return strconv.FormatFloat(v, 'f', r.digits, 64)
	}
}

// humanize prints large numbers with k/M suffixes.
func humanize(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + " M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " k"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

var rows = []row{
	{label: "1 bulk append `cat` 100 B lines → segfs", key: "bulk.segfs", unit: "lines/s", scale: 1, digits: -1},
	{label: "1 bulk append → segfs", key: "bulk.segfs.mb", unit: "MB/s", scale: 1, digits: 0},
	{label: "1 bulk append → discard-FUSE", key: "bulk.discard", unit: "lines/s", scale: 1, digits: -1},
	{label: "1 bulk append → plain file", key: "bulk.plain", unit: "lines/s", scale: 1, digits: -1},
	{label: "1 segfs ÷ discard-FUSE", num: "bulk.segfs", den: "bulk.discard", unit: "×", scale: 1, digits: 2, op: ">=", bar: 0.5},
	{label: "1 segfs ÷ plain file", num: "bulk.segfs", den: "bulk.plain", unit: "×", scale: 1, digits: 2},
	{label: "2 write(2) per line, fd open → segfs", key: "w1.segfs", unit: "lines/s", scale: 1, digits: -1},
	{label: "2 write(2) per line → discard-FUSE", key: "w1.discard", unit: "lines/s", scale: 1, digits: -1},
	{label: "2 write(2) per line → plain file", key: "w1.plain", unit: "lines/s", scale: 1, digits: -1},
	{label: "2 write(2): segfs ÷ discard-FUSE", num: "w1.segfs", den: "w1.discard", unit: "×", scale: 1, digits: 2, op: ">=", bar: 0.8},
	{label: "2 `echo >> data` loop → segfs", key: "echo.segfs", unit: "lines/s", scale: 1, digits: -1},
	{label: "2 `echo >>` loop → discard-FUSE", key: "echo.discard", unit: "lines/s", scale: 1, digits: -1},
	{label: "2 `echo >>` loop → plain file", key: "echo.plain", unit: "lines/s", scale: 1, digits: -1},
	{label: "2 echo loop: segfs ÷ discard-FUSE", num: "echo.segfs", den: "echo.discard", unit: "×", scale: 1, digits: 2, op: ">=", bar: 0.8},
	{label: "3 `cat data` first read (fresh mount)", key: "read.cat1", unit: "GB/s", scale: 1e-3, digits: 2, op: ">=", bar: 1},
	{label: "3 `cat data` re-read (page cache)", key: "read.cat2", unit: "GB/s", scale: 1e-3, digits: 2},
	{label: "3 cat re-read ÷ first read", num: "read.cat2", den: "read.cat1", unit: "×", scale: 1, digits: 2, op: ">=", bar: 3},
	{label: "3 `cat` of the plain input file (page cache)", key: "read.catplain", unit: "GB/s", scale: 1e-3, digits: 2},
	{label: "3 `grep -c` first read (fresh mount)", key: "read.grep1", unit: "GB/s", scale: 1e-3, digits: 2, op: ">=", bar: 1},
	{label: "3 `grep -c` re-read (page cache)", key: "read.grep2", unit: "GB/s", scale: 1e-3, digits: 2},
	{label: "3 grep re-read ÷ first read", num: "read.grep2", den: "read.grep1", unit: "×", scale: 1, digits: 2, op: ">=", bar: 3},
	{label: "3 `grep -c` of the plain input file (page cache)", key: "read.grepplain", unit: "GB/s", scale: 1e-3, digits: 2},
	{label: "4 `offset/N` open+read line+close, p50", key: "look.off50", unit: "µs", scale: 1, digits: 0},
	{label: "4 `offset/N` p99", key: "look.off99", unit: "µs", scale: 1, digits: 0, op: "<", bar: 1000},
	{label: "4 `readlink time/T` p50", key: "look.time50", unit: "µs", scale: 1, digits: 0},
	{label: "4 `readlink time/T` p99", key: "look.time99", unit: "µs", scale: 1, digits: 0, op: "<", bar: 1000},
	{label: "4 `head -n1 offset/N` as a process, p50", key: "look.head", unit: "ms", scale: 1, digits: 2},
	{label: "4 `sed -n Np data`", key: "look.sed", unit: "ms", scale: 1, digits: 0},
	{label: "4 `head -n1` of a plain file as a process (start-up floor)", key: "look.headplain", unit: "ms", scale: 1, digits: 2},
	// Informational: head's own start-up (the plain-file row) is most of
	// a head process, so the bar applies to the lookup it times (the
	// next row), the measure the p99 bar above also uses.
	{label: "4 sed ÷ `head -n1 offset/N` (both processes)", num: "look.sed", den: "look.head", unit: "×", scale: 1, digits: -1},
	{label: "4 sed ÷ `offset/N` lookup p50 (filesystem part only)", num: "look.sed", den: "look.off50ms", unit: "×", scale: 1, digits: -1, op: ">=", bar: 1000},
	{label: "5 franz-go consume 10 M records ← segfs", key: "fetch.segfs", unit: "MB/s", scale: 1, digits: 0},
	{label: "5 franz-go consume 10 M records ← kfake", key: "fetch.kfake", unit: "MB/s", scale: 1, digits: 0},
	{label: "5 consume: segfs ÷ kfake", num: "fetch.segfs", den: "fetch.kfake", unit: "×", scale: 1, digits: 2, op: ">=", bar: 2},
	{label: "5 raw Fetch v11, 8 MiB requests ← segfs", key: "fetch.raw", unit: "MB/s", scale: 1, digits: 0},
	{label: "5 plain sendfile of the same segment bytes", key: "fetch.sendfile", unit: "MB/s", scale: 1, digits: 0},
	{label: "5 raw fetch ÷ plain sendfile", num: "fetch.raw", den: "fetch.sendfile", unit: "×", scale: 1, digits: 2, op: ">=", bar: 0.8},
	{label: "5 franz-go produce 100 B, acks=all → segfs", key: "prod.segfs", unit: "records/s", scale: 1, digits: -1},
	{label: "5 franz-go produce 100 B, acks=all → kfake", key: "prod.kfake", unit: "records/s", scale: 1, digits: -1},
	{label: "5 produce: segfs ÷ kfake", num: "prod.segfs", den: "prod.kfake", unit: "×", scale: 1, digits: 2},
	{label: "6 remount after `kill -9` (10 closed + 1 GiB active)", key: "rec.unclean", unit: "ms", scale: 1, digits: 0},
	{label: "6 clean remount (same data)", key: "rec.clean", unit: "ms", scale: 1, digits: 0, op: "<", bar: 200},
	{label: "6 CRC scan of the active segment", key: "rec.scan", unit: "ms", scale: 1, digits: 0},
	{label: "6 unclean remount ÷ CRC scan", num: "rec.unclean", den: "rec.scan", unit: "×", scale: 1, digits: 2, op: "<=", bar: 1.5},
	{label: "7 daemon peak RSS during 1–5", key: "mem.peak", unit: "MiB", scale: 1.0 / 1024, digits: 1, op: "<", bar: 128},
	{label: "7 daemon RSS after mount, empty data dir", key: "mem.empty", unit: "MiB", scale: 1.0 / 1024, digits: 1},
	{label: "7 daemon RSS after mount, all the data of 1–5", key: "mem.full", unit: "MiB", scale: 1.0 / 1024, digits: 1, op: "<", bar: 128},
	{label: "7 daemon RSS after 200,000 distinct `offset/N`", key: "mem.lookups", unit: "MiB", scale: 1.0 / 1024, digits: 1, op: "<", bar: 128},
	{label: "7 daemon RSS, 1,000 partitions with `data` open", key: "mem.parts", unit: "MiB", scale: 1.0 / 1024, digits: 1, op: "<", bar: 128},
}

func verdict(r row, v float64) (string, bool) {
	d := v * r.scale
	var ok bool
	switch r.op {
	case "":
		return "", true
	case ">=":
		ok = d >= r.bar
	case "<":
		ok = d < r.bar
	case "<=":
		ok = d <= r.bar
	}
	if math.IsNaN(d) {
		return "not measured", false
	}
	if ok {
		return "pass", true
	}
	// By how much: the factor between the figure and the bar.
	f := d / r.bar
	if r.op != ">=" {
		f = r.bar / d
	}
	return fmt.Sprintf("**miss** (%.0f %% of the bar)", 100*f), false
}

// cmdReport writes the Markdown table of RESULTS to OUT and prints it; the
// missed bars go to OUT.miss, one per line.
func cmdReport(args []string) error {
	if err := need(args, 2, "report RESULTS OUT"); err != nil {
		return err
	}
	res, err := readResults(args[0])
	if err != nil {
		return err
	}
	var b, miss strings.Builder
	b.WriteString("| # | measure | median | range (min–max) | runs | bar | result |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		s := res.samples(r.key, r.num, r.den)
		if len(s) == 0 {
			continue
		}
		m := median(s)
		bar := ""
		if r.op != "" {
			bar = fmt.Sprintf("%s %s %s", strings.Replace(r.op, ">=", "≥", 1), r.display(r.bar/r.scale), r.unit)
			bar = strings.Replace(bar, "<=", "≤", 1)
		}
		v, _ := verdict(r, m)
		if strings.HasPrefix(v, "**miss") {
			fmt.Fprintf(&miss, "%s: %s %s against %s — %s\n", r.label[2:], r.display(m), r.unit, bar, strings.ReplaceAll(v, "*", ""))
		}
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s – %s | %d | %s | %s |\n", r.label[:1], r.label[2:], r.display(m), r.unit,
			r.display(s[0]), r.display(s[len(s)-1]), len(s), bar, v)
	}
	if err := os.WriteFile(args[1], []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(args[1]+".miss", []byte(miss.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	return nil
}

// cmdMedian prints the median of KEY's samples.
func cmdMedian(args []string) error {
	if err := need(args, 2, "median RESULTS KEY"); err != nil {
		return err
	}
	res, err := readResults(args[0])
	if err != nil {
		return err
	}
	fmt.Printf("%.3f\n", median(res.samples(args[1], "", "")))
	return nil
}
