package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shufflefl/shufflefl/checks"
	"github.com/shufflefl/shufflefl/privacy/account"
)

func openTemp(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenSettingsAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	var sync, fk int
	if err := db.sql.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := db.sql.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := db.sql.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 || fk != 1 {
		t.Errorf("journal_mode=%q synchronous=%d foreign_keys=%d, want wal 2 1", mode, sync, fk)
	}
	if v, err := db.SchemaVersion(); err != nil || v != LatestSchemaVersion {
		t.Errorf("SchemaVersion = %d, %v; want %d", v, err, LatestSchemaVersion)
	}
	db.Close()
	// Reopening applies no migration and keeps the data.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.SchemaVersion(); v != LatestSchemaVersion {
		t.Errorf("after reopen SchemaVersion = %d", v)
	}
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	// A database of another application.
	other := filepath.Join(dir, "other.db")
	sdb, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	sdb.Close()
	// A database from the future.
	future := filepath.Join(dir, "future.db")
	db, err := Open(future)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.sql.Exec(fmt.Sprintf("PRAGMA user_version = %d", LatestSchemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	notDB := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(notDB, bytes.Repeat([]byte("junk"), 1024), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
	}{
		{"empty path", "", checks.ErrInvalid},
		{"missing dir", filepath.Join(dir, "no", "x.db"), os.ErrNotExist},
		{"other app", other, ErrNotShufflefl},
		{"future schema", future, ErrSchemaTooNew},
		{"not sqlite", notDB, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(tc.path)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestLedgerStoreWithLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l := account.NewLedger(db.LedgerStore())
	if err := l.SetCap("a", account.Cap{Epsilon: 1, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 10; r++ {
		if err := l.Charge(account.Release{Client: "a", Round: r, Mechanism: "m", LocalEpsilon: 0.1, LocalDelta: 1e-6, CentralEpsilon: 0.01}); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	over := account.Release{Client: "a", Round: 10, Mechanism: "m", LocalEpsilon: 0.1}
	if err := l.Charge(over); !errors.Is(err, account.ErrCapExceeded) {
		t.Fatalf("11th charge: %v, want ErrCapExceeded", err)
	}
	db.Close()

	// A new process: a fresh ledger over the reopened store sees everything.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l = account.NewLedger(db.LedgerStore())
	spent, err := l.Spent("a")
	if err != nil {
		t.Fatal(err)
	}
	if d := spent.Epsilon - 1; d > 1e-12 || d < -1e-12 {
		t.Errorf("spent epsilon after reopen = %v, want 1", spent.Epsilon)
	}
	if err := l.Charge(account.Release{Client: "a", Round: 3, Mechanism: "m", LocalEpsilon: 0}); !errors.Is(err, account.ErrDuplicateRelease) {
		t.Errorf("charge for a charged round: %v", err)
	}
	es, err := db.LedgerStore().Entries("a")
	if err != nil || len(es) != 10 || es[9].Round != 9 || es[0].CentralEpsilon != 0.01 || es[0].LocalDelta != 1e-6 {
		t.Errorf("Entries = %+v, %v", es, err)
	}
	if es, err := db.LedgerStore().Entries("nobody"); es != nil || err != nil {
		t.Errorf("Entries(unknown) = %v, %v; want nil, nil", es, err)
	}
	c, ok, err := db.LedgerStore().Cap("a")
	if !ok || err != nil || c != (account.Cap{Epsilon: 1, Delta: 1e-5}) {
		t.Errorf("Cap = %v %v %v", c, ok, err)
	}
	// The store itself refuses a second entry for (client, round) and
	// values SQLite cannot hold.
	s := db.LedgerStore()
	if err := s.Append(account.Release{Client: "a", Round: 0, Mechanism: "m"}); !errors.Is(err, ErrDuplicateCharge) {
		t.Errorf("direct duplicate Append: %v", err)
	}
	for _, bad := range []account.Release{
		{Client: "", Round: 1, Mechanism: "m"},
		{Client: "b", Round: -1, Mechanism: "m"},
		{Client: "b", Round: 1, Mechanism: ""},
		{Client: "b", Round: 1, Mechanism: "m", LocalEpsilon: nan()},
		{Client: "b", Round: 1, Mechanism: "m", CentralDelta: -1},
	} {
		if err := s.Append(bad); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("Append(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := s.SetCap("b", account.Cap{Epsilon: nan()}); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("SetCap(NaN) = %v", err)
	}
	tot, err := s.Totals()
	if err != nil || len(tot) != 1 {
		t.Fatalf("Totals = %v, %v", tot, err)
	}
	if tot["a"] != spent {
		t.Errorf("Totals[a] = %v, ledger Spent = %v", tot["a"], spent)
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestLedgerStoreConcurrent(t *testing.T) {
	db := openTemp(t)
	l := account.NewLedger(db.LedgerStore())
	if err := l.SetDefaultCap(account.Cap{Epsilon: 100, Delta: 0.5}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for r := 0; r < 5; r++ {
				if err := l.Charge(account.Release{Client: fmt.Sprint("c", c), Round: r, Mechanism: "m", LocalEpsilon: 1}); err != nil {
					t.Error(err)
				}
			}
		}(c)
	}
	wg.Wait()
	tot, err := db.LedgerStore().Totals()
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 8; c++ {
		if got := tot[fmt.Sprint("c", c)].Epsilon; got != 5 {
			t.Errorf("client c%d total %v, want 5", c, got)
		}
	}
}

func TestOutbox(t *testing.T) {
	db := openTemp(t)
	l := account.NewLedger(db.LedgerStore())
	if err := l.SetCap("c", account.Cap{Epsilon: 1, Delta: 0}); err != nil {
		t.Fatal(err)
	}
	r0 := account.Release{Client: "c", Round: 0, Mechanism: "m", LocalEpsilon: 0.6}
	rep := []byte("sealed report bytes")
	if err := db.ChargeWithReport(l, r0, rep); err != nil {
		t.Fatal(err)
	}
	e, err := db.OutboxReport("c", 0)
	if err != nil || !bytes.Equal(e.Report, rep) || e.Release != r0 || !e.Sent.IsZero() {
		t.Fatalf("OutboxReport = %+v, %v", e, err)
	}
	// A second charge in the round is refused by the ledger; nothing changes.
	if err := db.ChargeWithReport(l, r0, []byte("other")); !errors.Is(err, account.ErrDuplicateRelease) {
		t.Errorf("second charge: %v", err)
	}
	// Over the cap: refused, and no report stored.
	r1 := account.Release{Client: "c", Round: 1, Mechanism: "m", LocalEpsilon: 0.6}
	if err := db.ChargeWithReport(l, r1, []byte("x")); !errors.Is(err, account.ErrCapExceeded) {
		t.Errorf("over cap: %v", err)
	}
	if _, err := db.OutboxReport("c", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("report of refused charge: %v", err)
	}
	if p, err := db.OutboxPending("c"); err != nil || len(p) != 1 || p[0].Round != 0 {
		t.Errorf("pending = %+v, %v", p, err)
	}
	if err := db.MarkSent("c", 0); err != nil {
		t.Fatal(err)
	}
	first, _ := db.OutboxReport("c", 0)
	time.Sleep(time.Millisecond)
	if err := db.MarkSent("c", 0); err != nil {
		t.Errorf("MarkSent twice: %v", err)
	}
	again, _ := db.OutboxReport("c", 0)
	if first.Sent.IsZero() || !again.Sent.Equal(first.Sent) {
		t.Errorf("sent time %v then %v", first.Sent, again.Sent)
	}
	if p, _ := db.OutboxPending("c"); len(p) != 0 {
		t.Errorf("pending after MarkSent: %v", p)
	}
	if err := db.MarkSent("c", 7); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkSent unknown: %v", err)
	}
	// A ledger over another store cannot write the report atomically.
	foreign := account.NewLedger(account.NewMemoryStore())
	foreign.SetDefaultCap(account.Cap{Epsilon: 1})
	if err := db.ChargeWithReport(foreign, account.Release{Client: "d", Round: 0, Mechanism: "m"}, rep); !errors.Is(err, ErrForeignLedger) {
		t.Errorf("foreign ledger: %v", err)
	}
	for _, bad := range [][]byte{nil, {}} {
		if err := db.ChargeWithReport(l, r1, bad); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("empty report: %v", err)
		}
	}
	if err := db.ChargeWithReport(nil, r1, rep); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("nil ledger: %v", err)
	}
}

func TestRoundLog(t *testing.T) {
	db := openTemp(t)
	counts := RoundCounts{Received: 10, Accepted: 7, Dummies: 2, Rejected: map[string]int64{"nan": 1, "range": 2}}
	cp := Checkpoint{Round: 0, Model: []byte{1, 2, 3}, Accountant: json.RawMessage(`{"eps":1.5}`)}
	if err := db.ReleaseRound(cp, counts); !errors.Is(err, ErrUnknownRound) {
		t.Errorf("release of unopened round: %v", err)
	}
	if err := db.OpenRound(0); err != nil {
		t.Fatal(err)
	}
	if err := db.OpenRound(0); !errors.Is(err, ErrRoundExists) {
		t.Errorf("open twice: %v", err)
	}
	if _, err := db.LatestCheckpoint(); !errors.Is(err, ErrNotFound) {
		t.Errorf("LatestCheckpoint before release: %v", err)
	}
	if err := db.ReleaseRound(cp, counts); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseRound(cp, counts); !errors.Is(err, ErrRoundReleased) {
		t.Errorf("release twice: %v", err)
	}
	if err := db.VoidRound(0, RoundCounts{}); !errors.Is(err, ErrRoundReleased) {
		t.Errorf("void after release: %v", err)
	}
	e, err := db.Round(0)
	if err != nil || e.Status != RoundReleased || e.Counts.Accepted != 7 || e.Counts.Rejected["range"] != 2 || e.Closed.IsZero() {
		t.Errorf("Round(0) = %+v, %v", e, err)
	}
	if err := db.OpenRound(1); err != nil {
		t.Fatal(err)
	}
	if err := db.VoidRound(1, RoundCounts{Received: 1, Accepted: 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseRound(Checkpoint{Round: 1, Model: []byte{1}, Accountant: json.RawMessage(`{}`)}, RoundCounts{}); !errors.Is(err, ErrRoundVoid) {
		t.Errorf("release of void round: %v", err)
	}
	for r := int64(2); r < 5; r++ {
		if err := db.OpenRound(r); err != nil {
			t.Fatal(err)
		}
		if err := db.ReleaseRound(Checkpoint{Round: r, Model: []byte{byte(r)}, Accountant: json.RawMessage(`[]`)}, RoundCounts{}); err != nil {
			t.Fatal(err)
		}
	}
	latest, err := db.LatestCheckpoint()
	if err != nil || latest.Round != 4 || !bytes.Equal(latest.Model, []byte{4}) {
		t.Errorf("LatestCheckpoint = %+v, %v", latest, err)
	}
	got, err := db.Checkpoint(0)
	if err != nil || string(got.Accountant) != `{"eps":1.5}` {
		t.Errorf("Checkpoint(0) = %+v, %v", got, err)
	}
	if n, err := db.PruneCheckpoints(2); err != nil || n != 2 {
		t.Errorf("PruneCheckpoints(2) = %d, %v; want 2", n, err)
	}
	if _, err := db.Checkpoint(0); !errors.Is(err, ErrNotFound) {
		t.Errorf("pruned checkpoint: %v", err)
	}
	log, err := db.RoundLog()
	if err != nil || len(log) != 5 || log[1].Status != RoundVoid {
		t.Errorf("RoundLog = %+v, %v", log, err)
	}
	for _, tc := range []struct {
		name string
		cp   Checkpoint
		c    RoundCounts
	}{
		{"negative round", Checkpoint{Round: -1, Model: []byte{1}, Accountant: json.RawMessage(`{}`)}, RoundCounts{}},
		{"empty model", Checkpoint{Round: 9, Accountant: json.RawMessage(`{}`)}, RoundCounts{}},
		{"bad json", Checkpoint{Round: 9, Model: []byte{1}, Accountant: json.RawMessage(`{`)}, RoundCounts{}},
		{"counts do not add up", Checkpoint{Round: 9, Model: []byte{1}, Accountant: json.RawMessage(`{}`)}, RoundCounts{Received: 3, Accepted: 1}},
		{"negative count", Checkpoint{Round: 9, Model: []byte{1}, Accountant: json.RawMessage(`{}`)}, RoundCounts{Received: -1, Accepted: -1}},
		{"zero reject count", Checkpoint{Round: 9, Model: []byte{1}, Accountant: json.RawMessage(`{}`)}, RoundCounts{Rejected: map[string]int64{"x": 0}}},
		{"dummies over received", Checkpoint{Round: 9, Model: []byte{1}, Accountant: json.RawMessage(`{}`)}, RoundCounts{Received: 1, Accepted: 1, Dummies: 2}},
	} {
		if err := db.ReleaseRound(tc.cp, tc.c); !errors.Is(err, checks.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
}

func testReport(round int64, client string, nonce byte, msgs ...string) Report {
	r := Report{Round: round, Client: client, Nonce: bytes.Repeat([]byte{nonce}, 16)}
	for i, m := range msgs {
		r.Messages = append(r.Messages, SealedMessage{Label: uint32(i), Sealed: []byte(m)})
	}
	return r
}

func TestInbox(t *testing.T) {
	db := openTemp(t)
	if err := db.Accept(testReport(0, "a", 1, "x")); !errors.Is(err, ErrUnknownRound) {
		t.Errorf("unknown round: %v", err)
	}
	if err := db.OpenInboxRound(0, []byte("announce-0")); err != nil {
		t.Fatal(err)
	}
	if err := db.OpenInboxRound(0, nil); !errors.Is(err, ErrRoundExists) {
		t.Errorf("open twice: %v", err)
	}
	a := testReport(0, "a", 1, "a0", "a1", "a2")
	steps := []struct {
		name string
		r    Report
		want error
	}{
		{"first", a, nil},
		{"identical retry", a, ErrAlreadyAccepted},
		{"identical retry, new nonce", func() Report { r := a; r.Nonce = bytes.Repeat([]byte{9}, 16); return r }(), ErrAlreadyAccepted},
		{"second report", testReport(0, "a", 2, "other"), ErrDuplicateReport},
		{"nonce replay", testReport(0, "b", 1, "b0"), ErrReplay},
		{"content replay", func() Report { r := a; r.Client = "b"; r.Nonce = bytes.Repeat([]byte{3}, 16); return r }(), ErrReplay},
		{"second client", testReport(0, "b", 4, "b0", "b1"), nil},
		{"no messages", testReport(0, "c", 5), checks.ErrInvalid},
		{"empty message", testReport(0, "c", 5, ""), checks.ErrInvalid},
		{"short nonce", Report{Round: 0, Client: "c", Nonce: []byte{1}, Messages: a.Messages}, checks.ErrInvalid},
		{"no client", Report{Round: 0, Nonce: a.Nonce, Messages: a.Messages}, checks.ErrInvalid},
		{"negative round", testReport(-1, "c", 5, "c"), checks.ErrInvalid},
	}
	for _, s := range steps {
		if err := db.Accept(s.r); !errors.Is(err, s.want) || (s.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", s.name, err, s.want)
		}
	}
	// The distinct refusals really are distinct.
	if errors.Is(ErrDuplicateReport, ErrReplay) || errors.Is(ErrAlreadyAccepted, ErrDuplicateReport) {
		t.Error("refusal errors alias each other")
	}
	reps, err := db.RoundReports(0)
	if err != nil || len(reps) != 2 {
		t.Fatalf("RoundReports = %v, %v", reps, err)
	}
	if reps[0].Client != "a" || len(reps[0].Messages) != 3 || string(reps[0].Messages[2].Sealed) != "a2" || reps[0].Messages[2].Label != 2 {
		t.Errorf("report 0 = %+v", reps[0])
	}
	ir, err := db.InboxRound(0)
	if err != nil || ir.Reports != 2 || ir.Messages != 5 || ir.Status != InboxOpen || string(ir.Announcement) != "announce-0" {
		t.Errorf("InboxRound = %+v, %v", ir, err)
	}
	if err := db.MarkForwarded(0); !errors.Is(err, ErrNoBatch) {
		t.Errorf("forward before SaveBatch: %v", err)
	}
	shuffled := []SealedMessage{reps[1].Messages[1], {Label: 0, Sealed: []byte("dummy")}, reps[0].Messages[0]}
	if err := db.SaveBatch(0, []byte("header"), shuffled); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBatch(0, nil, shuffled[:1]); !errors.Is(err, ErrBatchSaved) {
		t.Errorf("SaveBatch twice: %v", err)
	}
	if err := db.Accept(testReport(0, "c", 6, "c")); !errors.Is(err, ErrRoundClosed) {
		t.Errorf("report after SaveBatch: %v", err)
	}
	if err := db.VoidInboxRound(0); !errors.Is(err, ErrBatchSaved) {
		t.Errorf("void after SaveBatch: %v", err)
	}
	b, err := db.Batch(0)
	if err != nil || string(b.Header) != "header" || len(b.Messages) != 3 || string(b.Messages[1].Sealed) != "dummy" || b.Messages[0].Label != 1 {
		t.Errorf("Batch = %+v, %v", b, err)
	}
	if err := db.MarkForwarded(0); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkForwarded(0); !errors.Is(err, ErrAlreadyForwarded) {
		t.Errorf("forward twice: %v", err)
	}
	if err := db.Accept(testReport(0, "c", 6, "c")); !errors.Is(err, ErrRoundClosed) {
		t.Errorf("report after forward: %v", err)
	}
	checkVoidInboxRound(t, db)
}

// checkVoidInboxRound voids inbox round 1 of TestInbox's db (round 0
// forwarded) and checks what a void and an unknown round refuse.
func checkVoidInboxRound(t *testing.T, db *DB) {
	t.Helper()
	if err := db.OpenInboxRound(1, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.VoidInboxRound(1); err != nil {
		t.Fatal(err)
	}
	if err := db.MarkForwarded(1); !errors.Is(err, ErrRoundVoid) {
		t.Errorf("forward void: %v", err)
	}
	if err := db.SaveBatch(1, nil, nil); !errors.Is(err, ErrRoundClosed) {
		t.Errorf("SaveBatch of a void round: %v", err)
	}
	if _, err := db.Batch(1); !errors.Is(err, ErrNoBatch) {
		t.Errorf("Batch of a void round: %v", err)
	}
	if err := db.MarkForwarded(7); !errors.Is(err, ErrUnknownRound) {
		t.Errorf("forward unknown: %v", err)
	}
	if _, err := db.RoundReports(7); !errors.Is(err, ErrUnknownRound) {
		t.Errorf("reports of unknown round: %v", err)
	}
	rs, err := db.InboxRounds()
	if err != nil || len(rs) != 2 || rs[1].Status != InboxVoid || rs[1].Reports != 0 {
		t.Errorf("InboxRounds = %+v, %v", rs, err)
	}
}

func TestAcceptBatch(t *testing.T) {
	db := openTemp(t)
	if err := db.OpenInboxRound(3, nil); err != nil {
		t.Fatal(err)
	}
	batch := []Report{
		testReport(3, "a", 1, "a"),
		testReport(3, "a", 2, "a-second"), // duplicate within the batch
		testReport(3, "b", 1, "b"),        // nonce replay within the batch
		testReport(3, "", 3, "x"),         // invalid
		testReport(3, "c", 4, "c"),
	}
	errs, err := db.AcceptBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, ErrDuplicateReport, ErrReplay, checks.ErrInvalid, nil}
	for i := range want {
		if (want[i] == nil) != (errs[i] == nil) || !errors.Is(errs[i], want[i]) {
			t.Errorf("report %d: %v, want %v", i, errs[i], want[i])
		}
	}
	ir, _ := db.InboxRound(3)
	if ir.Reports != 2 {
		t.Errorf("stored %d reports, want 2", ir.Reports)
	}
}

func TestNonces(t *testing.T) {
	db := openTemp(t)
	t0 := time.Unix(1000, 0)
	n := bytes.Repeat([]byte{7}, 16)
	if err := db.UseNonce("a", n, t0); err != nil {
		t.Fatal(err)
	}
	if err := db.UseNonce("a", n, t0); !errors.Is(err, ErrReplay) {
		t.Errorf("reuse: %v", err)
	}
	if err := db.UseNonce("b", n, t0); err != nil {
		t.Errorf("other client, same nonce: %v", err)
	}
	if err := db.UseNonce("a", []byte{1}, t0); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("short nonce: %v", err)
	}
	if k, err := db.PruneNonces(t0.Add(time.Second)); err != nil || k != 2 {
		t.Errorf("PruneNonces = %d, %v", k, err)
	}
	if err := db.UseNonce("a", n, t0); err != nil {
		t.Errorf("after prune: %v", err)
	}
}

func TestPackRoundTrip(t *testing.T) {
	ms := []SealedMessage{{0, []byte{1}}, {1<<32 - 1, bytes.Repeat([]byte{2}, 300)}, {7, []byte("x")}}
	got, err := unpackMessages(packMessages(ms), len(ms))
	if err != nil || len(got) != 3 || got[1].Label != 1<<32-1 || len(got[1].Sealed) != 300 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	p := packMessages(ms)
	for _, bad := range [][]byte{p[:len(p)-1], append(append([]byte{}, p...), 0), {0x80}} {
		if _, err := unpackMessages(bad, 3); err == nil {
			t.Errorf("unpack(%x...) succeeded", bad[:1])
		}
	}
}

func TestClosed(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.OpenRound(1); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
}

func TestBatchChunks(t *testing.T) {
	db := openTemp(t)
	if err := db.OpenInboxRound(0, nil); err != nil {
		t.Fatal(err)
	}
	// 2.5 chunks' worth of messages, and an empty batch in another round.
	ms := make([]SealedMessage, 5)
	for i := range ms {
		ms[i] = SealedMessage{Label: uint32(i), Sealed: bytes.Repeat([]byte{byte(i + 1)}, batchChunkBytes/2-16)}
	}
	if err := db.SaveBatch(0, nil, ms); err != nil {
		t.Fatal(err)
	}
	var chunks int
	db.sql.QueryRow(`SELECT n_chunks FROM inbox_batch WHERE round = 0`).Scan(&chunks)
	if chunks != 3 {
		t.Errorf("%d chunks, want 3", chunks)
	}
	b, err := db.Batch(0)
	if err != nil || len(b.Messages) != 5 {
		t.Fatalf("Batch = %d messages, %v", len(b.Messages), err)
	}
	for i := range ms {
		if !bytes.Equal(b.Messages[i].Sealed, ms[i].Sealed) || b.Messages[i].Label != ms[i].Label {
			t.Errorf("message %d differs", i)
		}
	}
	if err := db.SaveBatch(0, nil, []SealedMessage{{Label: 1}}); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("empty message: %v", err)
	}
	if err := db.OpenInboxRound(1, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.SaveBatch(1, []byte("h"), nil); err != nil {
		t.Fatal(err)
	}
	if b, err := db.Batch(1); err != nil || len(b.Messages) != 0 || string(b.Header) != "h" {
		t.Errorf("empty batch = %+v, %v", b, err)
	}
}

// FuzzUnpackMessages feeds arbitrary bytes to the decoder of the packed
// message blobs read back from disk: it must not panic, and whatever it
// accepts must re-pack to the same bytes.
func FuzzUnpackMessages(f *testing.F) {
	f.Add(packMessages([]SealedMessage{{0, []byte{1}}, {1<<32 - 1, []byte("abc")}}), 2)
	f.Add([]byte{0x80}, 1)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		ms, err := unpackMessages(b, n)
		if err != nil {
			return
		}
		if !bytes.Equal(packMessages(ms), b) {
			t.Fatalf("unpack/pack of %x is not the identity", b)
		}
	})
}

func TestAcceptor(t *testing.T) {
	db := openTemp(t)
	if err := db.OpenInboxRound(0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewAcceptor(0); !errors.Is(err, checks.ErrInvalid) {
		t.Errorf("NewAcceptor(0): %v", err)
	}
	acc, err := db.NewAcceptor(8)
	if err != nil {
		t.Fatal(err)
	}
	// 40 clients, each submitting twice concurrently: exactly one of the
	// pair is stored, the other is refused as a retry of it.
	var wg sync.WaitGroup
	errs := make([]error, 80)
	for i := 0; i < 80; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = acc.Accept(context.Background(), testReport(0, fmt.Sprint("c", i/2), byte(i), fmt.Sprint("m", i/2)))
		}(i)
	}
	wg.Wait()
	for c := 0; c < 40; c++ {
		a, b := errs[2*c], errs[2*c+1]
		if (a == nil) == (b == nil) || !(errors.Is(a, ErrAlreadyAccepted) || errors.Is(b, ErrAlreadyAccepted)) {
			t.Errorf("client %d: %v / %v", c, a, b)
		}
	}
	if ir, _ := db.InboxRound(0); ir.Reports != 40 {
		t.Errorf("stored %d reports, want 40", ir.Reports)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := acc.Accept(ctx, testReport(0, "late", 200, "x")); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Accept: %v", err)
	}
	acc.Close()
	acc.Close()
	if err := acc.Accept(context.Background(), testReport(0, "z", 201, "z")); !errors.Is(err, ErrAcceptorClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
}
