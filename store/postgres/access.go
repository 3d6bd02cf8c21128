package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/access"
	"github.com/jackc/pgx/v5"
)

var _ access.Store = (*Store)(nil)

// AddUser keeps a user (access.Store).
// The user gets a new id (access.NewUserID), never one seen before: the id is the
// identity, the name only its label.
func (s *Store) AddUser(ctx context.Context, u access.User) (access.User, error) {
	if err := access.CheckUser(u); err != nil {
		return access.User{}, fmt.Errorf("add user: %w", err)
	}
	id, err := access.NewUserID()
	if err != nil {
		return access.User{}, err
	}
	u.ID = id
	tag, err := s.db.Exec(ctx, `INSERT INTO users (id, name, role, token_hash, created) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
		u.ID, u.Name, string(u.Role), u.TokenHash, u.Created.UTC())
	if err != nil {
		return access.User{}, fmt.Errorf("add user %q: %w", u.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return access.User{}, fmt.Errorf("add user %q: %w", u.Name, access.ErrUserExists)
	}
	return u, nil
}

// RemoveUser removes a user and the shares granted to them.
func (s *Store) RemoveUser(ctx context.Context, name string) error {
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		var id string
		err := tx.QueryRow(ctx, `DELETE FROM users WHERE name = $1 RETURNING id`, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return access.ErrNoSuchUser
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM shares WHERE grantee = $1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove user %q: %w", name, err)
	}
	return nil
}

// Users lists the users by name.
func (s *Store) Users(ctx context.Context) ([]access.User, error) {
	return s.queryUsers(ctx, `SELECT id, name, role, token_hash, created FROM users ORDER BY name`)
}

// UserByToken finds the user whose token hashes to hash.
func (s *Store) UserByToken(ctx context.Context, hash string) (access.User, bool, error) {
	us, err := s.queryUsers(ctx, `SELECT id, name, role, token_hash, created FROM users WHERE token_hash = $1`, hash)
	if err != nil || len(us) == 0 {
		return access.User{}, false, err
	}
	return us[0], true, nil
}

func (s *Store) queryUsers(ctx context.Context, q string, args ...any) ([]access.User, error) {
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	defer rows.Close()
	out := []access.User{}
	for rows.Next() {
		var u access.User
		var role string
		if err := rows.Scan(&u.ID, &u.Name, &role, &u.TokenHash, &u.Created); err != nil {
			return nil, fmt.Errorf("list users: %w", err)
		}
		u.Role, u.Created = access.Role(role), u.Created.UTC()
		out = append(out, u)
	}
	return out, rows.Err()
}

// ClaimOwner makes user the session's owner unless it has one; the first claim wins.
// The insert and the read are two statements: under READ COMMITTED one statement's
// snapshot would not see a row a racing claim committed while this one waited on it.
func (s *Store) ClaimOwner(ctx context.Context, session, user string) (string, error) {
	var owner string
	err := s.db.QueryRow(ctx, `INSERT INTO session_owners (session, owner) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING owner`, session, user).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.db.QueryRow(ctx, `SELECT owner FROM session_owners WHERE session = $1`, session).Scan(&owner)
	}
	if err != nil {
		return "", fmt.Errorf("claim session %q: %w", session, err)
	}
	return owner, nil
}

// Owner is the session's owner, "" when it has none.
func (s *Store) Owner(ctx context.Context, session string) (string, error) {
	var owner string
	err := s.db.QueryRow(ctx, `SELECT owner FROM session_owners WHERE session = $1`, session).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("owner of session %q: %w", session, err)
	}
	return owner, nil
}

// PutShare grants (or changes) a user's share of a session.
func (s *Store) PutShare(ctx context.Context, sh access.Share) error {
	if err := access.CheckShare(sh); err != nil {
		return fmt.Errorf("share: %w", err)
	}
	_, err := s.db.Exec(ctx, `INSERT INTO shares (session, grantee, role, by_user, created) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (session, grantee) DO UPDATE SET role = excluded.role, by_user = excluded.by_user, created = excluded.created`,
		sh.Session, sh.User, string(sh.Role), sh.By, sh.Created.UTC())
	if err != nil {
		return fmt.Errorf("share session %q with %q: %w", sh.Session, sh.User, err)
	}
	return nil
}

// RemoveShare revokes a user's share of a session.
func (s *Store) RemoveShare(ctx context.Context, session, user string) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM shares WHERE session = $1 AND grantee = $2`, session, user)
	if err != nil {
		return fmt.Errorf("unshare session %q with %q: %w", session, user, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("unshare session %q with %q: %w", session, user, access.ErrNoSuchShare)
	}
	return nil
}

// Shares lists a session's shares by user.
func (s *Store) Shares(ctx context.Context, session string) ([]access.Share, error) {
	rows, err := s.db.Query(ctx, `SELECT grantee, role, by_user, created FROM shares WHERE session = $1 ORDER BY grantee`, session)
	if err != nil {
		return nil, fmt.Errorf("shares of session %q: %w", session, err)
	}
	defer rows.Close()
	out := []access.Share{}
	for rows.Next() {
		sh := access.Share{Session: session}
		var role string
		if err := rows.Scan(&sh.User, &role, &sh.By, &sh.Created); err != nil {
			return nil, fmt.Errorf("shares of session %q: %w", session, err)
		}
		sh.Role, sh.Created = access.ShareRole(role), sh.Created.UTC()
		out = append(out, sh)
	}
	return out, rows.Err()
}

// SharedWith lists the sessions shared with a user.
func (s *Store) SharedWith(ctx context.Context, user string) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT session FROM shares WHERE grantee = $1 ORDER BY session`, user)
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
func (s *Store) ForgetSession(ctx context.Context, session string) error {
	err := s.db.BeginFunc(ctx, func(tx pgx.Tx) error {
		for _, q := range []string{`DELETE FROM session_owners WHERE session = $1`, `DELETE FROM shares WHERE session = $1`} {
			if _, err := tx.Exec(ctx, q, session); err != nil {
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
