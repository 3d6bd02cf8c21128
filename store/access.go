package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/access"
)

var _ access.Store = (*SQLite)(nil)

// AddUser keeps a user (access.Store).
// The user gets a new id (access.NewUserID), never one seen before: the id is the
// identity, the name only its label.
func (s *SQLite) AddUser(ctx context.Context, u access.User) (access.User, error) {
	if err := access.CheckUser(u); err != nil {
		return access.User{}, fmt.Errorf("add user: %w", err)
	}
	id, err := access.NewUserID()
	if err != nil {
		return access.User{}, err
	}
	u.ID = id
	err = s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO users (id, name, role, token_hash, created) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			u.ID, u.Name, string(u.Role), u.TokenHash, u.Created.UTC().Format(timeText))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return access.ErrUserExists
		}
		return nil
	})
	if err != nil {
		return access.User{}, fmt.Errorf("add user %q: %w", u.Name, err)
	}
	return u, nil
}

// RemoveUser removes a user and the shares granted to them. What they own stays keyed
// by their id, which no later user gets.
func (s *SQLite) RemoveUser(ctx context.Context, name string) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		var id string
		err := tx.QueryRowContext(ctx, `DELETE FROM users WHERE name = ? RETURNING id`, name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return access.ErrNoSuchUser
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM shares WHERE user = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove user %q: %w", name, err)
	}
	return nil
}

// Users lists the users by name.
func (s *SQLite) Users(ctx context.Context) ([]access.User, error) {
	return s.queryUsers(ctx, `SELECT id, name, role, token_hash, created FROM users ORDER BY name`)
}

// UserByToken finds the user whose token hashes to hash.
func (s *SQLite) UserByToken(ctx context.Context, hash string) (access.User, bool, error) {
	us, err := s.queryUsers(ctx, `SELECT id, name, role, token_hash, created FROM users WHERE token_hash = ?`, hash)
	if err != nil || len(us) == 0 {
		return access.User{}, false, err
	}
	return us[0], true, nil
}

func (s *SQLite) queryUsers(ctx context.Context, q string, args ...any) ([]access.User, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	defer rows.Close()
	out := []access.User{}
	for rows.Next() {
		var u access.User
		var role, at string
		if err := rows.Scan(&u.ID, &u.Name, &role, &u.TokenHash, &at); err != nil {
			return nil, fmt.Errorf("list users: %w", err)
		}
		u.Role, u.Created = access.Role(role), parseTime(at)
		out = append(out, u)
	}
	return out, rows.Err()
}

// ClaimOwner makes user the session's owner unless it has one; the first claim wins.
func (s *SQLite) ClaimOwner(ctx context.Context, session, user string) (string, error) {
	var owner string
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_owners (session, owner) VALUES (?, ?) ON CONFLICT DO NOTHING`, session, user); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT owner FROM session_owners WHERE session = ?`, session).Scan(&owner)
	})
	if err != nil {
		return "", fmt.Errorf("claim session %q: %w", session, err)
	}
	return owner, nil
}

// Owner is the session's owner, "" when it has none.
func (s *SQLite) Owner(ctx context.Context, session string) (string, error) {
	if err := s.watch.check(); err != nil {
		return "", fmt.Errorf("owner of session %q: %w", session, err)
	}
	var owner string
	err := s.queryRow(ctx, `SELECT owner FROM session_owners WHERE session = ?`, session).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("owner of session %q: %w", session, err)
	}
	return owner, nil
}

// PutShare grants (or changes) a user's share of a session.
func (s *SQLite) PutShare(ctx context.Context, sh access.Share) error {
	if err := access.CheckShare(sh); err != nil {
		return fmt.Errorf("share: %w", err)
	}
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO shares (session, user, role, by, created) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (session, user) DO UPDATE SET role = excluded.role, by = excluded.by, created = excluded.created`,
			sh.Session, sh.User, string(sh.Role), sh.By, sh.Created.UTC().Format(timeText))
		return err
	})
	if err != nil {
		return fmt.Errorf("share session %q with %q: %w", sh.Session, sh.User, err)
	}
	return nil
}

// RemoveShare revokes a user's share of a session.
func (s *SQLite) RemoveShare(ctx context.Context, session, user string) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM shares WHERE session = ? AND user = ?`, session, user)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return access.ErrNoSuchShare
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unshare session %q with %q: %w", session, user, err)
	}
	return nil
}

// Shares lists a session's shares by user.
func (s *SQLite) Shares(ctx context.Context, session string) ([]access.Share, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("shares of session %q: %w", session, err)
	}
	rows, err := s.query(ctx, `SELECT user, role, by, created FROM shares WHERE session = ? ORDER BY user`, session)
	if err != nil {
		return nil, fmt.Errorf("shares of session %q: %w", session, err)
	}
	defer rows.Close()
	out := []access.Share{}
	for rows.Next() {
		sh := access.Share{Session: session}
		var role, at string
		if err := rows.Scan(&sh.User, &role, &sh.By, &at); err != nil {
			return nil, fmt.Errorf("shares of session %q: %w", session, err)
		}
		sh.Role, sh.Created = access.ShareRole(role), parseTime(at)
		out = append(out, sh)
	}
	return out, rows.Err()
}

// SharedWith lists the sessions shared with a user.
func (s *SQLite) SharedWith(ctx context.Context, user string) ([]string, error) {
	if err := s.watch.check(); err != nil {
		return nil, fmt.Errorf("sessions shared with %q: %w", user, err)
	}
	rows, err := s.query(ctx, `SELECT session FROM shares WHERE user = ? ORDER BY session`, user)
	if err != nil {
		return nil, fmt.Errorf("sessions shared with %q: %w", user, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ForgetSession removes a session's owner and shares (DeleteSession does too).
func (s *SQLite) ForgetSession(ctx context.Context, session string) error {
	err := s.w.write(ctx, func(ctx context.Context, tx *wtx) error {
		for _, q := range []string{`DELETE FROM session_owners WHERE session = ?`, `DELETE FROM shares WHERE session = ?`} {
			if _, err := tx.ExecContext(ctx, q, session); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("forget session %q: %w", session, err)
	}
	return nil
}
