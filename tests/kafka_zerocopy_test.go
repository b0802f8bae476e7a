package tests

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Zero copy, seen from outside the process: strace attached to `segfs
// serve` while a client reads a multi-megabyte partition shows sendfile(2)
// carrying every record byte, and the bytes the server writes to sockets
// from user space staying at the size of the response framing.
func TestKafkaZeroCopyStrace(t *testing.T) {
	straceBin := needProgram(t, "strace", "strace")
	srv := kafkaServe(t, "")
	cl := kafkaClient(t, srv.addr, kgo.AllowAutoTopicCreation(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	const n = 2000
	var vals []string
	for i := range n {
		vals = append(vals, fmt.Sprintf("record %05d %s", i, strings.Repeat(strconv.Itoa(i%10), 3000)))
	}
	for i := 0; i < n; i += 200 {
		kafkaProduce(t, cl, "zc", 0, vals[i:i+200]...)
	}
	logFile := filepath.Join(srv.data, "zc-0", "00000000000000000000.log")
	st, err := os.Stat(logFile)
	if err != nil {
		t.Fatal(err)
	}
	logSize := st.Size()

	// Attach to every thread of the running server for the read only.
	trace := filepath.Join(t.TempDir(), "strace.out")
	cmd := exec.Command(straceBin, "-f", "-yy", "-e", "trace=sendfile,write,writev,sendmsg,sendto",
		"-o", trace, "-p", strconv.Itoa(srv.cmd.Process.Pid))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	attached := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			if !seen && strings.Contains(sc.Text(), "attached") {
				seen = true
				attached <- true
			}
		}
		if !seen {
			attached <- false
		}
		cmd.Wait()
		close(exited)
	}()
	select {
	case ok := <-attached:
		if !ok {
			t.Fatal("strace ended without attaching")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("strace did not attach in 20s")
	}

	got := kafkaConsume(t, srv.addr, "zc", 0, 0, n)
	if string(got[n-1].Value) != vals[n-1] {
		t.Fatalf("last record read back wrong: %.40q", got[n-1].Value)
	}
	cmd.Process.Signal(syscall.SIGINT) // detach; the server keeps running
	<-exited

	sendfile, sockWrites := straceSums(t, trace)
	t.Logf("log %d bytes; while reading: sendfile %d bytes, user-space socket writes %d bytes", logSize, sendfile, sockWrites)
	if sendfile < logSize {
		t.Errorf("sendfile carried %d bytes, less than the %d-byte log that was read", sendfile, logSize)
	}
	if sockWrites > 64<<10 {
		t.Errorf("the server wrote %d bytes to sockets from user space for a %d-byte read; want only the framing", sockWrites, logSize)
	}
}

var straceResult = regexp.MustCompile(`= (\d+)$`)

// straceSums adds up, from an `strace -f -yy` log, the bytes sendfile
// returned and the bytes write/writev/sendmsg/sendto returned for TCP
// sockets. A call split by another thread ("<unfinished ...>", then
// "<... resumed>") is matched to its start by thread id.
func straceSums(t *testing.T, path string) (sendfile, sockWrites int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pending := map[string]string{} // tid → the unfinished call's text
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		tid, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if strings.HasSuffix(rest, "<unfinished ...>") {
			pending[tid] = rest
			continue
		}
		call := rest
		if strings.HasPrefix(rest, "<... ") {
			call = pending[tid] + rest
			delete(pending, tid)
		}
		m := straceResult.FindStringSubmatch(call)
		if m == nil {
			continue
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		switch {
		case strings.HasPrefix(call, "sendfile("):
			sendfile += n
		case strings.Contains(call, "<TCP"):
			sockWrites += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sendfile, sockWrites
}
