package store

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/internal/crashtest"
	"github.com/shufflefl/shufflefl/internal/longtest"
	"github.com/shufflefl/shufflefl/privacy/account"
)

// The crash test re-executes the test binary as a child (TestCrashChild with
// crashChildEnv set) that writes to one database as every role does —
// client charges with their sealed reports, shuffler reports (single and
// batched), round forwarding, analyzer releases with checkpoints, request
// nonces — and reports each acknowledged write on file descriptor 3. The
// parent SIGKILLs it at a random moment, reopens the database and checks that
// every acknowledged write is present and intact, that nothing is
// half-written or duplicated, and that no client's ledger total is below what
// its outbox released. The next child resumes from the same database.

const (
	crashChildEnv  = "SHUFFLEFL_STORE_CRASH_CHILD" // database path for the child
	crashItersEnv  = "SHUFFLEFL_STORE_CRASH_ITERS" // parent: number of kills
	crashLieEnv    = "SHUFFLEFL_STORE_CRASH_LIE"   // child: ack outbox writes before making them
	crashClients   = 6                             // clients with an outbox
	crashPerRound  = 5                             // shuffler reports per round
	crashEpsilon   = 0.25                          // local epsilon per charge
	crashMaxModelB = 256 << 10                     // checkpoint model size bound
)

// crashReport is the deterministic sealed report of (client, round): a
// restarted child can recompute what it must have stored.
func crashReport(client string, round int64) []byte {
	h := sha256.Sum256([]byte(fmt.Sprintf("outbox/%s/%d", client, round)))
	return bytes.Repeat(h[:], 1+int(h[0])%64)
}

// crashMessages are the sealed messages of shuffler report (round, client).
func crashMessages(round int64, client string) []SealedMessage {
	h := sha256.Sum256([]byte(fmt.Sprintf("inbox/%d/%s", round, client)))
	n := 1 + int(h[0])%40
	ms := make([]SealedMessage, n)
	for i := range ms {
		b := sha256.Sum256(append(h[:], byte(i), byte(i>>8)))
		ms[i] = SealedMessage{Label: uint32(i), Sealed: bytes.Repeat(b[:], 1+int(b[0])%8)}
	}
	return ms
}

// crashModel is the checkpoint model of round: large enough that a kill
// often lands inside its write.
func crashModel(round int64) []byte {
	h := sha256.Sum256([]byte(fmt.Sprintf("model/%d", round)))
	n := int(binary.LittleEndian.Uint32(h[:4]) % crashMaxModelB)
	return bytes.Repeat(h[:], 1+n/32)
}

func crashAccountant(round int64) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"round":%d,"epsilon":%g}`, round, 0.5*float64(round+1)))
}

// TestCrashChild is the child process; it does nothing unless run by
// TestCrashRecovery.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("child of TestCrashRecovery only")
	}
	ack := os.NewFile(3, "ack")
	if err := crashChild(path, ack); err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
}

func crashChild(path string, ack *os.File) error {
	w := &crashWorker{ack: ack}
	var err error
	if w.db, err = Open(path); err != nil {
		return err
	}
	w.l = account.NewLedger(w.db.LedgerStore())
	if err := w.l.SetDefaultCap(account.Cap{Epsilon: 1e9, Delta: 0.5}); err != nil {
		return err
	}
	// Resume: the next outbox round of each client.
	w.next = make([]int64, crashClients)
	for c := range w.next {
		es, err := w.db.LedgerStore().Entries(fmt.Sprint("client-", c))
		if err != nil {
			return err
		}
		w.next[c] = int64(len(es))
	}
	if err := w.resumeAnalyzer(); err != nil {
		return err
	}
	if err := w.resumeShuffler(); err != nil {
		return err
	}
	w.lie = os.Getenv(crashLieEnv) != ""
	w.rng = mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for step := 0; ; step++ {
		client, err := w.clientStep()
		if err != nil {
			return err
		}
		if err := w.shufflerStep(); err != nil {
			return err
		}
		// Request nonces.
		if err := w.db.UseNonce(client, randNonce(), time.Now()); err != nil {
			return err
		}
		// Analyzer: every third step, release a round with its checkpoint.
		if step%3 == 0 {
			if err := w.analyzerStep(); err != nil {
				return err
			}
		}
	}
}

// crashWorker is the child's state: the three roles' progress in the one
// database, and the pipe each durable step is acknowledged on.
type crashWorker struct {
	ack *os.File
	db  *DB
	l   *account.Ledger
	lie bool
	rng *mrand.Rand
	// next is each client's next outbox round; inRound and inCount the
	// shuffler's open round and its reports (-1: to open); nextRelease
	// the analyzer's next round.
	next             []int64
	inRound, inCount int64
	nextRelease      int64
}

// send acknowledges a durable step to the parent.
func (w *crashWorker) send(format string, a ...any) error {
	_, err := w.ack.WriteString(fmt.Sprintf(format, a...) + "\n") // one write(2): atomic on a pipe
	return err
}

// resumeAnalyzer retries the last release (which must be refused by
// state), or releases a round left open.
func (w *crashWorker) resumeAnalyzer() error {
	log, err := w.db.RoundLog()
	if err != nil || len(log) == 0 {
		return err
	}
	last := log[len(log)-1]
	w.nextRelease = last.Round + 1
	switch last.Status {
	case RoundReleased:
		err := w.db.ReleaseRound(Checkpoint{Round: last.Round, Model: crashModel(last.Round), Accountant: crashAccountant(last.Round)}, RoundCounts{})
		if !errors.Is(err, ErrRoundReleased) {
			return fmt.Errorf("re-release of round %d: %v", last.Round, err)
		}
		return w.send("X re-release-refused")
	case RoundOpen:
		w.nextRelease = last.Round
		return w.send("X analyzer-round-open")
	}
	return nil
}

// resumeShuffler resumes the open round, retrying its last report.
func (w *crashWorker) resumeShuffler() error {
	rounds, err := w.db.InboxRounds()
	if err != nil {
		return err
	}
	if len(rounds) == 0 {
		w.inRound, w.inCount = 0, -1
		return nil
	}
	r := rounds[len(rounds)-1]
	w.inRound, w.inCount = r.Round, r.Reports
	switch {
	case r.Status == InboxShuffled:
		// Killed between SaveBatch and MarkForwarded: the batch must be
		// there and a second save refused.
		if err := crashSaveBatch(w.db, r.Round); !errors.Is(err, ErrBatchSaved) {
			return fmt.Errorf("re-save of batch %d: %v", r.Round, err)
		}
		if err := w.db.MarkForwarded(r.Round); err != nil {
			return err
		}
		if err := w.send("F %d", r.Round); err != nil {
			return err
		}
		if err := w.send("X batch-saved-not-forwarded"); err != nil {
			return err
		}
		w.inRound, w.inCount = r.Round+1, -1
	case r.Status != InboxOpen:
		w.inRound, w.inCount = r.Round+1, -1
	case r.Reports > 0:
		c := fmt.Sprint("sc-", r.Reports-1)
		err := w.db.Accept(Report{Round: r.Round, Client: c, Nonce: randNonce(), Messages: crashMessages(r.Round, c)})
		if !errors.Is(err, ErrAlreadyAccepted) {
			return fmt.Errorf("retry of report %d/%s: %v", r.Round, c, err)
		}
		return w.send("X report-retry-refused")
	}
	return nil
}

// clientStep charges a random client and stores its sealed report
// together, and returns the client.
func (w *crashWorker) clientStep() (string, error) {
	c := w.rng.IntN(crashClients)
	client := fmt.Sprint("client-", c)
	r := account.Release{Client: client, Round: int(w.next[c]), Mechanism: "crash", LocalEpsilon: crashEpsilon, LocalDelta: 1e-9}
	if w.lie { // negative control: acknowledge first, write later
		if err := w.send("O %s %d", client, w.next[c]); err != nil {
			return "", err
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := w.db.ChargeWithReport(w.l, r, crashReport(client, w.next[c])); err != nil {
		return "", err
	}
	if !w.lie {
		if err := w.send("O %s %d", client, w.next[c]); err != nil {
			return "", err
		}
	}
	w.next[c]++
	return client, nil
}

// shufflerStep opens a round if needed, accepts reports, or shuffles once,
// saves and forwards a full round (a restart finds the round shuffled and
// forwards the saved batch).
func (w *crashWorker) shufflerStep() error {
	if w.inCount < 0 {
		if err := w.db.OpenInboxRound(w.inRound, []byte(fmt.Sprint("announcement ", w.inRound))); err != nil {
			return err
		}
		if err := w.send("R %d", w.inRound); err != nil {
			return err
		}
		w.inCount = 0
	}
	if w.inCount >= crashPerRound {
		if err := crashSaveBatch(w.db, w.inRound); err != nil {
			return err
		}
		if err := w.send("S %d", w.inRound); err != nil {
			return err
		}
		if err := w.db.MarkForwarded(w.inRound); err != nil {
			return err
		}
		if err := w.send("F %d", w.inRound); err != nil {
			return err
		}
		w.inRound, w.inCount = w.inRound+1, -1
		return nil
	}
	batch := 1 + w.rng.IntN(3)
	var rs []Report
	for k := int64(0); k < int64(batch) && w.inCount+k < crashPerRound; k++ {
		sc := fmt.Sprint("sc-", w.inCount+k)
		rs = append(rs, Report{Round: w.inRound, Client: sc, Nonce: randNonce(), Messages: crashMessages(w.inRound, sc)})
	}
	errs, err := w.db.AcceptBatch(rs)
	if err != nil {
		return err
	}
	for i, e := range errs {
		if e != nil {
			return e
		}
		if err := w.send("I %d %s", w.inRound, rs[i].Client); err != nil {
			return err
		}
	}
	w.inCount += int64(len(rs))
	return nil
}

// analyzerStep releases the next round with its checkpoint.
func (w *crashWorker) analyzerStep() error {
	if e, err := w.db.Round(w.nextRelease); errors.Is(err, ErrUnknownRound) {
		if err := w.db.OpenRound(w.nextRelease); err != nil {
			return err
		}
	} else if err != nil {
		return err
	} else if e.Status != RoundOpen {
		return fmt.Errorf("round %d is %s at resume", w.nextRelease, e.Status)
	}
	cp := Checkpoint{Round: w.nextRelease, Model: crashModel(w.nextRelease), Accountant: crashAccountant(w.nextRelease)}
	counts := RoundCounts{Received: w.nextRelease + 3, Accepted: w.nextRelease + 1, Dummies: 1, Rejected: map[string]int64{"nan": 1, "range": 1}}
	if err := w.db.ReleaseRound(cp, counts); err != nil {
		return err
	}
	if err := w.send("A %d", w.nextRelease); err != nil {
		return err
	}
	w.nextRelease++
	return nil
}

// crashBatch is round's shuffled batch: its full set of reports' messages
// (sc-0 ... sc-(crashPerRound-1)) in reverse order plus one dummy.
func crashBatch(round int64) []SealedMessage {
	var ms []SealedMessage
	for i := crashPerRound - 1; i >= 0; i-- {
		ms = append(ms, crashMessages(round, fmt.Sprint("sc-", i))...)
	}
	return append(ms, SealedMessage{Label: 0, Sealed: []byte(fmt.Sprint("dummy ", round))})
}

// crashSaveBatch saves round's batch (crashBatch).
func crashSaveBatch(db *DB, round int64) error {
	return db.SaveBatch(round, []byte(fmt.Sprint("header ", round)), crashBatch(round))
}

func randNonce() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return b
}

// acked is what the parent learned from the children's acknowledgements.
type acked struct {
	outbox    map[string]int64 // client -> rounds acknowledged (0..n-1)
	inbox     map[string]bool  // "round/client"
	opened    map[int64]bool   // shuffler rounds
	shuffled  map[int64]bool
	forwarded map[int64]bool
	released  map[int64]bool
	resumes   map[string]int // recovery paths the children took
	lines     int
}

func (a *acked) add(line string) error {
	f := strings.Fields(line)
	num := func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
	switch {
	case len(f) == 2 && f[0] == "X":
		a.resumes[f[1]]++
		return nil
	case len(f) == 3 && f[0] == "O":
		r, err := num(f[2])
		if err != nil {
			return err
		}
		if r+1 > a.outbox[f[1]] {
			a.outbox[f[1]] = r + 1
		}
	case len(f) == 3 && f[0] == "I":
		a.inbox[f[1]+"/"+f[2]] = true
	case len(f) == 2 && len(f[0]) == 1 && strings.Contains("RSFA", f[0]):
		r, err := num(f[1])
		if err != nil {
			return err
		}
		map[string]map[int64]bool{"R": a.opened, "S": a.shuffled, "F": a.forwarded, "A": a.released}[f[0]][r] = true
	default:
		return fmt.Errorf("bad ack line %q", line)
	}
	a.lines++
	return nil
}

func newAcked() *acked {
	return &acked{outbox: map[string]int64{}, inbox: map[string]bool{}, opened: map[int64]bool{},
		shuffled: map[int64]bool{}, forwarded: map[int64]bool{}, released: map[int64]bool{}, resumes: map[string]int{}}
}

// TestCrashDetectsEarlyAck is the negative control of TestCrashRecovery: a
// child that acknowledges each outbox write 50 ms before making it must be
// caught. Each kill lands in such a window with probability about 0.7 (the
// rest of a step takes roughly 20 ms), so missing it in all 10 kills has
// probability about 0.3^10 < 1e-5.
func TestCrashDetectsEarlyAck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lie.db")
	t.Setenv(crashLieEnv, "1")
	a := newAcked()
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for it := 0; it < 10; it++ {
		if err := runCrashChild(path, time.Duration(20+rng.IntN(200))*time.Millisecond, a); err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		if err := verifyCrash(path, a); err != nil {
			t.Logf("caught after %d kills: %v", it+1, err)
			return
		}
	}
	t.Fatal("10 kills of a child that acknowledges before writing went unnoticed")
}

func TestCrashRecovery(t *testing.T) {
	iters := 3
	if longtest.Enabled() {
		iters = 8
	}
	if s := os.Getenv(crashItersEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q", crashItersEnv, s)
		}
		iters = n
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	a := newAcked()
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 2))
	start := time.Now()
	for it := 0; it < iters; it++ {
		before := a.lines
		delay := time.Duration(20+rng.IntN(400)) * time.Millisecond
		if err := runCrashChild(path, delay, a); err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		if err := verifyCrash(path, a); err != nil {
			t.Fatalf("iteration %d (killed after %v, %d acks): %v", it, delay, a.lines-before, err)
		}
		t.Logf("iteration %d: killed after %v, %d acknowledged writes (total %d)", it, delay, a.lines-before, a.lines)
	}
	t.Logf("%d kills, %d acknowledged writes verified in %v; recovery paths taken: %v", iters, a.lines, time.Since(start).Round(time.Millisecond), a.resumes)
	if a.lines == 0 {
		t.Fatal("no write was acknowledged: the test exercised nothing")
	}
}

// runCrashChild starts a child on path, collects its acknowledgements, and
// SIGKILLs it delay after its first one.
func runCrashChild(path string, delay time.Duration, a *acked) error {
	return crashtest.Kill("^TestCrashChild$", []string{crashChildEnv + "=" + path}, delay, a.add)
}

// verifyCrash reopens the database and checks it against the
// acknowledgements.
func verifyCrash(path string, a *acked) error {
	db, err := Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	var ic string
	if err := db.sql.QueryRow("PRAGMA integrity_check").Scan(&ic); err != nil || ic != "ok" {
		return fmt.Errorf("integrity_check: %q, %v", ic, err)
	}
	if err := verifyOutbox(db, a); err != nil {
		return err
	}
	if err := verifyInbox(db, a); err != nil {
		return err
	}
	return verifyRoundLog(db, a)
}

// verifyOutbox checks the clients' outbox and ledger.
func verifyOutbox(db *DB, a *acked) error {
	// Client outbox and ledger: every acknowledged report is present with
	// its bytes; every charge has its report and vice versa (atomicity);
	// the ledger total is never below what was released.
	tot, err := db.LedgerStore().Totals()
	if err != nil {
		return err
	}
	for c := 0; c < crashClients; c++ {
		client := fmt.Sprint("client-", c)
		es, err := db.LedgerStore().Entries(client)
		if err != nil {
			return err
		}
		if int64(len(es)) < a.outbox[client] {
			return fmt.Errorf("%s: %d ledger entries, %d acknowledged", client, len(es), a.outbox[client])
		}
		released := 0.0
		for i, e := range es {
			if e.Round != i {
				return fmt.Errorf("%s: entry %d has round %d (duplicate or gap)", client, i, e.Round)
			}
			o, err := db.OutboxReport(client, int64(e.Round))
			if err != nil {
				return fmt.Errorf("%s round %d: charge without report: %v", client, e.Round, err)
			}
			if !bytes.Equal(o.Report, crashReport(client, int64(e.Round))) {
				return fmt.Errorf("%s round %d: report bytes differ", client, e.Round)
			}
			released += o.Release.LocalEpsilon
		}
		if tot[client].Epsilon < released-1e-9 {
			return fmt.Errorf("%s: ledger total %v below released %v", client, tot[client].Epsilon, released)
		}
	}
	var orphans int
	if err := db.sql.QueryRow(`SELECT count(*) FROM outbox o LEFT JOIN ledger_entry l
		ON l.client = o.client AND l.round = o.round WHERE l.seq IS NULL`).Scan(&orphans); err != nil || orphans != 0 {
		return fmt.Errorf("%d reports without a charge (%v)", orphans, err)
	}
	return nil
}

// verifyInbox checks the shuffler's inbox rounds and every acknowledged
// step of the shuffler.
func verifyInbox(db *DB, a *acked) error {
	rounds, err := db.InboxRounds()
	if err != nil {
		return err
	}
	status := map[int64]InboxStatus{}
	for _, r := range rounds {
		status[r.Round] = r.Status
		if err := verifyInboxRound(db, r); err != nil {
			return err
		}
	}
	for k := range a.inbox {
		var round int64
		var client string
		fmt.Sscanf(strings.Replace(k, "/", " ", 1), "%d %s", &round, &client)
		var n int
		if err := db.sql.QueryRow(`SELECT count(*) FROM inbox_report WHERE round = ? AND client = ?`, round, client).Scan(&n); err != nil || n != 1 {
			return fmt.Errorf("acknowledged report %s stored %d times (%v)", k, n, err)
		}
	}
	for r := range a.opened {
		if _, ok := status[r]; !ok {
			return fmt.Errorf("acknowledged shuffler round %d missing", r)
		}
	}
	for r := range a.shuffled {
		if status[r] != InboxShuffled && status[r] != InboxForwarded {
			return fmt.Errorf("acknowledged batch of round %d: status %q", r, status[r])
		}
	}
	for r := range a.forwarded {
		if status[r] != InboxForwarded {
			return fmt.Errorf("acknowledged forward of round %d: status %q", r, status[r])
		}
	}
	return nil
}

// verifyInboxRound checks one inbox round: what it retains, its reports
// while open, its batch once shuffled.
func verifyInboxRound(db *DB, r InboxRound) error {
	// Retention: an open round's reports keep their sealed messages;
	// a shuffled, forwarded or void round's have none (deleted with
	// the status change), and only a shuffled round has its batch.
	var kept int
	if err := db.sql.QueryRow(`SELECT count(*) FROM inbox_report WHERE round = ? AND length(messages) > 0`, r.Round).Scan(&kept); err != nil {
		return err
	}
	var chunks int
	if err := db.sql.QueryRow(`SELECT count(*) FROM inbox_batch_chunk WHERE round = ?`, r.Round).Scan(&chunks); err != nil {
		return err
	}
	if r.Status != InboxOpen {
		if kept != 0 {
			return fmt.Errorf("%s round %d keeps the sealed messages of %d reports", r.Status, r.Round, kept)
		}
		if _, err := db.RoundReports(r.Round); !errors.Is(err, ErrExpired) {
			return fmt.Errorf("%s round %d: reports read back (%v)", r.Status, r.Round, err)
		}
		if r.Status != InboxShuffled && chunks != 0 {
			return fmt.Errorf("%s round %d keeps %d batch chunks", r.Status, r.Round, chunks)
		}
	}
	if r.Status == InboxOpen {
		if err := verifyOpenReports(db, r); err != nil {
			return err
		}
	}
	return verifyRoundBatch(db, r)
}

// verifyOpenReports checks an open round's reports, in order, each once.
func verifyOpenReports(db *DB, r InboxRound) error {
	reps, err := db.RoundReports(r.Round)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, rep := range reps {
		if seen[rep.Client] {
			return fmt.Errorf("round %d: client %s stored twice", r.Round, rep.Client)
		}
		seen[rep.Client] = true
		if rep.Client != fmt.Sprint("sc-", i) {
			return fmt.Errorf("round %d: report %d is from %s", r.Round, i, rep.Client)
		}
		want := crashMessages(r.Round, rep.Client)
		if len(want) != len(rep.Messages) {
			return fmt.Errorf("round %d %s: %d messages, want %d", r.Round, rep.Client, len(rep.Messages), len(want))
		}
		for j := range want {
			if want[j].Label != rep.Messages[j].Label || !bytes.Equal(want[j].Sealed, rep.Messages[j].Sealed) {
				return fmt.Errorf("round %d %s: message %d differs", r.Round, rep.Client, j)
			}
		}
	}
	return nil
}

// verifyRoundBatch checks an inbox round's batch against its status.
func verifyRoundBatch(db *DB, r InboxRound) error {
	switch r.Status {
	case InboxShuffled:
		if r.Reports != crashPerRound {
			return fmt.Errorf("shuffled round %d has %d reports", r.Round, r.Reports)
		}
		b, err := db.Batch(r.Round)
		if err != nil {
			return err
		}
		want := crashBatch(r.Round)
		if len(b.Messages) != len(want) {
			return fmt.Errorf("batch of round %d has %d messages, want %d", r.Round, len(b.Messages), len(want))
		}
		for i := range want {
			if want[i].Label != b.Messages[i].Label || !bytes.Equal(want[i].Sealed, b.Messages[i].Sealed) {
				return fmt.Errorf("batch of round %d is not the saved one (message %d)", r.Round, i)
			}
		}
	case InboxForwarded:
		if r.Reports != crashPerRound {
			return fmt.Errorf("forwarded round %d has %d reports", r.Round, r.Reports)
		}
		if _, err := db.Batch(r.Round); !errors.Is(err, ErrExpired) {
			return fmt.Errorf("forwarded round %d: batch read back (%v)", r.Round, err)
		}
	default:
		if _, err := db.Batch(r.Round); !errors.Is(err, ErrNoBatch) {
			return fmt.Errorf("round %d is %s but has a batch (%v)", r.Round, r.Status, err)
		}
	}
	return nil
}

// verifyRoundLog checks the analyzer's round log: released rounds have
// their checkpoint, intact.
func verifyRoundLog(db *DB, a *acked) error {
	log, err := db.RoundLog()
	if err != nil {
		return err
	}
	st := map[int64]RoundStatus{}
	for i, e := range log {
		st[e.Round] = e.Status
		if e.Round != int64(i) {
			return fmt.Errorf("round log entry %d is round %d", i, e.Round)
		}
		cp, err := db.Checkpoint(e.Round)
		switch e.Status {
		case RoundReleased:
			if err != nil {
				return fmt.Errorf("released round %d without checkpoint: %v", e.Round, err)
			}
			if !bytes.Equal(cp.Model, crashModel(e.Round)) || string(cp.Accountant) != string(crashAccountant(e.Round)) {
				return fmt.Errorf("checkpoint of round %d differs", e.Round)
			}
			if e.Counts.Accepted != e.Round+1 || e.Counts.Rejected["nan"] != 1 {
				return fmt.Errorf("round %d counts %+v", e.Round, e.Counts)
			}
		case RoundOpen:
			if !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("open round %d has a checkpoint (%v)", e.Round, err)
			}
			if i != len(log)-1 {
				return fmt.Errorf("open round %d is not the last", e.Round)
			}
		default:
			return fmt.Errorf("round %d status %s", e.Round, e.Status)
		}
	}
	for r := range a.released {
		if st[r] != RoundReleased {
			return fmt.Errorf("acknowledged release of round %d: status %q", r, st[r])
		}
	}
	return nil
}
