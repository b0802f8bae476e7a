package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/segfs/segfs/logstore/record"
)

// cmdGen writes LINES lines of exactly LINELEN bytes (newline included):
// a line number, then 'x' padding.
func cmdGen(args []string) error {
	if err := need(args, 3, "gen FILE LINES LINELEN"); err != nil {
		return err
	}
	n, ll := atoi(args[1]), int(atoi(args[2]))
	if ll < 2 {
		return fmt.Errorf("line length %d too short", ll)
	}
	f, err := os.Create(args[0])
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := bytes.Repeat([]byte{'x'}, ll)
	line[ll-1] = '\n'
	for i := int64(0); i < n; i++ {
		num := strconv.AppendInt(nil, i, 10)
		if len(num) > ll-1 {
			num = num[len(num)-(ll-1):]
		}
		copy(line, num)
		w.Write(line)
		for j := range num {
			line[j] = 'x'
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// percentile of sorted durations, in microseconds.
func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	i := int(p * float64(len(d)-1))
	return float64(d[i].Nanoseconds()) / 1e3
}

// cmdLookup times COUNT opens of offset/N for random N in [0, MAXN) —
// open, one read of 8 KiB (head -n1 reads once and stops at the newline),
// close — and COUNT readlinks of time/T for random T in [T0, T1] (epoch
// ms). Prints the p50 and p99 of each in µs.
func cmdLookup(args []string) error {
	if err := need(args, 5, "lookup PARTDIR COUNT MAXN T0 T1"); err != nil {
		return err
	}
	dir, count, maxN, t0, t1 := args[0], int(atoi(args[1])), atoi(args[2]), atoi(args[3]), atoi(args[4])
	buf := make([]byte, 8192)
	offs := make([]time.Duration, 0, count)
	for range count {
		n := rand.Int64N(maxN)
		p := filepath.Join(dir, "offset", strconv.FormatInt(n, 10))
		start := time.Now()
		fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		m, err := syscall.Read(fd, buf)
		syscall.Close(fd)
		offs = append(offs, time.Since(start))
		if err != nil || m <= 0 || bytes.IndexByte(buf[:m], '\n') < 0 {
			return fmt.Errorf("%s: read %d bytes, %v: no line", p, m, err)
		}
	}
	times := make([]time.Duration, 0, count)
	for range count {
		t := t0 + rand.Int64N(t1-t0+1)
		p := filepath.Join(dir, "time", strconv.FormatInt(t, 10))
		start := time.Now()
		target, err := os.Readlink(p)
		times = append(times, time.Since(start))
		if err != nil || !strings.HasPrefix(target, "../offset/") {
			return fmt.Errorf("readlink %s: %q %v", p, target, err)
		}
	}
	slices.Sort(offs)
	slices.Sort(times)
	fmt.Printf("%.1f %.1f %.1f %.1f\n", pct(offs, .5), pct(offs, .99), pct(times, .5), pct(times, .99))
	return nil
}

// cmdStatMany lstat()s offset/0 .. offset/COUNT-1: COUNT distinct lookups.
func cmdStatMany(args []string) error {
	if err := need(args, 2, "statmany PARTDIR COUNT"); err != nil {
		return err
	}
	dir, count := args[0], atoi(args[1])
	start := time.Now()
	var st syscall.Stat_t
	for n := int64(0); n < count; n++ {
		p := filepath.Join(dir, "offset", strconv.FormatInt(n, 10))
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	fmt.Printf("%.3f\n", time.Since(start).Seconds())
	return nil
}

// rssKiB reads VmRSS and VmHWM of pid.
func rssKiB(pid string) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "VmRSS:" {
			rss, _ = strconv.ParseInt(f[1], 10, 64)
		}
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return rss, hwm, nil
}

// cmdOpenMany opens every FILE for reading, reads its first 4 KiB and
// keeps it open, then prints the RSS and peak RSS (KiB) of process PID.
func cmdOpenMany(args []string) error {
	if err := need(args, 2, "openmany PID FILE..."); err != nil {
		return err
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	buf := make([]byte, 4096)
	for _, p := range args[1:] {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		files = append(files, f)
		if _, err := f.Read(buf); err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	rss, hwm, err := rssKiB(args[0])
	if err != nil {
		return err
	}
	fmt.Printf("%d %d %d\n", rss, hwm, len(files))
	return nil
}

// cmdCRCScan reads FILE in 16 MiB pieces and validates every batch
// (length, magic, CRC-32C), as recovery must at least do. Prints seconds,
// bytes and batches.
func cmdCRCScan(args []string) error {
	if err := need(args, 1, "crcscan FILE"); err != nil {
		return err
	}
	start := time.Now()
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 32<<20)
	var have, pos int64
	var batches int64
	carry := 0
	for {
		n, rerr := f.ReadAt(buf[carry:], pos)
		pos += int64(n)
		avail := buf[:carry+n]
		for len(avail) >= 12 {
			size := 12 + int(int32(binary.BigEndian.Uint32(avail[8:12])))
			if size > len(buf) {
				return fmt.Errorf("batch of %d bytes at %d", size, have)
			}
			if size > len(avail) {
				break
			}
			if err := record.Validate(avail[:size]); err != nil {
				return fmt.Errorf("batch at %d: %w", have, err)
			}
			have += int64(size)
			batches++
			avail = avail[size:]
		}
		carry = copy(buf, avail)
		if rerr == io.EOF || n == 0 {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	fmt.Printf("%.4f %d %d\n", time.Since(start).Seconds(), have, batches)
	return nil
}

// sendFiles sends every file in paths whole over c with sendfile(2) in
// 8 MiB calls.
func sendFiles(c net.Conn, paths []string) error {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		var off int64
		var serr error
		for off < fi.Size() && serr == nil {
			werr := raw.Write(func(fd uintptr) bool {
				for off < fi.Size() {
					n, err := syscall.Sendfile(int(fd), int(f.Fd()), &off, int(min(8<<20, fi.Size()-off)))
					if err == syscall.EAGAIN {
						return false
					}
					if err != nil {
						serr = err
						return true
					}
					if n == 0 {
						serr = io.ErrUnexpectedEOF
						return true
					}
				}
				return true
			})
			if werr != nil {
				serr = werr
			}
		}
		f.Close()
		if serr != nil {
			return serr
		}
	}
	return nil
}

// cmdSendfileServe listens on ADDR and sends every FILE whole to each
// connection in turn, with sendfile(2) in 8 MiB calls, then closes it. It
// prints "ready" and runs until SIGINT/SIGTERM. It is the plain-sendfile
// peer of the fetch server: a server process of its own, which bench.sh
// starts in a session of its own as segfs's daemon runs (see bench.sh on
// scheduler autogroups).
func cmdSendfileServe(args []string) error {
	if err := need(args, 2, "sendfile-serve ADDR FILE..."); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", args[0])
	if err != nil {
		return err
	}
	go func() {
		sigc := make(chan os.Signal, 1)
		signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
		<-sigc
		ln.Close()
	}()
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		err = sendFiles(c, args[1:])
		c.Close()
		if err != nil {
			return err
		}
	}
}

// cmdSendfile reads everything a sendfile-serve at ADDR sends, 1 MiB per
// read, and discards it. Prints seconds and bytes.
func cmdSendfile(args []string) error {
	if err := need(args, 1, "sendfile ADDR"); err != nil {
		return err
	}
	c, err := net.Dial("tcp", args[0])
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	var got int64
	start := time.Now()
	for {
		n, err := c.Read(buf)
		got += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	fmt.Printf("%.4f %d\n", time.Since(start).Seconds(), got)
	return nil
}
