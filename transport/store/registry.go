package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/shufflefl/shufflefl/checks"
)

// ErrBudgetChanged: a client registered again with another budget than the
// one recorded at its first registration (a run's budgets are fixed).
var ErrBudgetChanged = errors.New("store: client registered before with another budget")

// Registration is a client's registration at the shuffler: the budget it
// declared for one round (user level, public).
type Registration struct {
	Client  string
	Epsilon float64
	Delta   float64
}

// RegisterClient records client's registration with its declared budget,
// durably, before the shuffler answers. Registering again with the same
// budget changes nothing and returns the stored registration; with another
// budget it wraps ErrBudgetChanged and keeps the first.
func (db *DB) RegisterClient(r Registration) (Registration, error) {
	if err := validateClient(r.Client); err != nil {
		return Registration{}, fmt.Errorf("store: register: %w", err)
	}
	if strings.ContainsRune(r.Client, '\n') {
		return Registration{}, fmt.Errorf("store: register: %w", checks.Invalidf("client id contains a newline"))
	}
	if !(r.Epsilon > 0) || math.IsInf(r.Epsilon, 1) || !(r.Delta >= 0 && r.Delta < 1) {
		return Registration{}, fmt.Errorf("store: register %s: %w", r.Client, checks.Invalidf("budget (%v, %v) outside (0, inf) x [0, 1)", r.Epsilon, r.Delta))
	}
	ctx := context.Background()
	var got Registration
	err := db.tx(ctx, func(t *sql.Tx) error {
		if _, err := t.ExecContext(ctx, `INSERT INTO client_registration (client, epsilon, delta, registered_ns) VALUES (?, ?, ?, ?)
			ON CONFLICT (client) DO NOTHING`, r.Client, r.Epsilon, r.Delta, nowNS()); err != nil {
			return err
		}
		got.Client = r.Client
		return t.QueryRowContext(ctx, `SELECT epsilon, delta FROM client_registration WHERE client = ?`, r.Client).Scan(&got.Epsilon, &got.Delta)
	})
	if err != nil {
		return Registration{}, fmt.Errorf("store: register %s: %w", r.Client, err)
	}
	if got.Epsilon != r.Epsilon || got.Delta != r.Delta {
		return got, fmt.Errorf("store: register %s with (%v, %v): recorded (%v, %v): %w", r.Client, r.Epsilon, r.Delta, got.Epsilon, got.Delta, ErrBudgetChanged)
	}
	return got, nil
}

// Registrations returns every recorded registration, ordered by client.
func (db *DB) Registrations() ([]Registration, error) {
	rows, err := db.sql.Query(`SELECT client, epsilon, delta FROM client_registration ORDER BY client`)
	if err != nil {
		return nil, fmt.Errorf("store: registrations: %w", err)
	}
	defer rows.Close()
	var out []Registration
	for rows.Next() {
		var r Registration
		if err := rows.Scan(&r.Client, &r.Epsilon, &r.Delta); err != nil {
			return nil, fmt.Errorf("store: registrations: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Sample is a sampled round's sample: the clients offered the round and
// the size of the registered population it was drawn from.
type Sample struct {
	Population int
	Clients    []string
}

// OpenSampledInboxRound is OpenInboxRound for a round offered only to a
// sample of the registered clients: the round and its sample are written in
// one transaction, so a restarted shuffler serves the same sample. Opening
// a round twice wraps ErrRoundExists.
func (db *DB) OpenSampledInboxRound(round int64, announcement []byte, s Sample) error {
	if round < 0 {
		return fmt.Errorf("store: open inbox round: %w", checks.Invalidf("round must be >= 0, got %d", round))
	}
	if s.Population < len(s.Clients) {
		return fmt.Errorf("store: open inbox round %d: %w", round, checks.Invalidf("sample of %d from a population of %d", len(s.Clients), s.Population))
	}
	for _, c := range s.Clients {
		if err := validateClient(c); err != nil {
			return fmt.Errorf("store: open inbox round %d: %w", round, err)
		}
		if strings.ContainsRune(c, '\n') {
			return fmt.Errorf("store: open inbox round %d: %w", round, checks.Invalidf("client id contains a newline"))
		}
	}
	return db.openInboxRound(round, announcement, func(t *sql.Tx) error {
		_, err := t.ExecContext(context.Background(), `INSERT INTO inbox_sample (round, population, clients) VALUES (?, ?, ?)`,
			round, s.Population, strings.Join(s.Clients, "\n"))
		return err
	})
}

// InboxSample returns round's sample, or an error wrapping ErrNotFound for
// a round opened without one.
func (db *DB) InboxSample(round int64) (Sample, error) {
	var s Sample
	var clients string
	err := db.sql.QueryRow(`SELECT population, clients FROM inbox_sample WHERE round = ?`, round).Scan(&s.Population, &clients)
	if errors.Is(err, sql.ErrNoRows) {
		return Sample{}, fmt.Errorf("store: sample of round %d: %w", round, ErrNotFound)
	}
	if err != nil {
		return Sample{}, fmt.Errorf("store: sample of round %d: %w", round, err)
	}
	if clients != "" {
		s.Clients = strings.Split(clients, "\n")
	}
	return s, nil
}
