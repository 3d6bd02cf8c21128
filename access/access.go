package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Role is what a user may do across sessions.
type Role string

// The roles, from most to least. A role grants what those below it grant.
const (
	// RoleAdmin may do everything, including reading the audit log and managing users.
	RoleAdmin Role = "admin"
	// RoleOperator runs agents, approves and reads every session, and reads insights
	// and metrics; not the audit log, not users.
	RoleOperator Role = "operator"
	// RoleUser starts runs and acts on their own sessions and those shared with them.
	RoleUser Role = "user"
	// RoleViewer reads their own sessions and those shared with them; starts nothing.
	RoleViewer Role = "viewer"
)

// Roles lists the roles, most privileged first.
var Roles = []Role{RoleAdmin, RoleOperator, RoleUser, RoleViewer}

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles, r) {
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q: want one of admin, operator, user, viewer", s)
}

// ShareRole is what a share grants on one session.
type ShareRole string

const (
	// ShareViewer may read the session.
	ShareViewer ShareRole = "viewer"
	// ShareEditor may also continue it, approve and abort in it.
	ShareEditor ShareRole = "editor"
)

// ParseShareRole checks a share role name.
func ParseShareRole(s string) (ShareRole, error) {
	switch r := ShareRole(s); r {
	case ShareViewer, ShareEditor:
		return r, nil
	}
	return "", fmt.Errorf("unknown share role %q: want viewer or editor", s)
}

// Principal is an authenticated caller. ID is the user's immutable id (a name is a
// label: a user removed and added again under the same name is a new identity with a new
// ID); ownership, memories and audit records refer to the ID.
type Principal struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// Privileged reports whether the caller sees every session (admin, operator).
func (p Principal) Privileged() bool { return p.Role == RoleAdmin || p.Role == RoleOperator }

// Action is what a caller wants to do with a session.
type Action string

const (
	Read    Action = "read"   // the session, its events, its stream; give feedback
	Write   Action = "write"  // continue it, approve or reject in it, abort its run
	ShareIt Action = "share"  // share it, list and revoke its shares
	Delete  Action = "delete" // delete it
)

// Allowed is the rule. owner is the id of the session's owner ("" when it has none: a
// session made before users existed, or by the CLI without --user); shares are the
// session's shares, whose User is the grantee's id. The caller is matched by p.ID, never
// by name: a name is a label, and a user removed and added again under it is someone else.
//
//   - admin and operator may do everything to every session;
//   - the owner may do everything but only while their role allows it: a viewer who owns
//     a session (their role was lowered) reads it and nothing more;
//   - a share grants reading (viewer) or reading and writing (editor), capped by the
//     grantee's role in the same way; sharing and deleting stay with the owner;
//   - an ownerless session is reachable only by admin and operator.
func Allowed(p Principal, a Action, owner string, shares []Share) bool {
	if p.Privileged() {
		return true
	}
	if p.ID == "" {
		return false
	}
	if p.Role == RoleViewer && a != Read {
		return false
	}
	if owner != "" && owner == p.ID {
		return true
	}
	for _, s := range shares {
		if s.User != p.ID {
			continue
		}
		switch a {
		case Read:
			return true
		case Write:
			return s.Role == ShareEditor
		}
	}
	return false
}

// MayStart reports whether the caller may start a new session (any role but viewer).
func MayStart(p Principal) bool { return p.Role != RoleViewer && p.Role != "" }

// User is a user of the API. TokenHash is the hex sha256 of their bearer token; the token
// itself is never stored.
type User struct {
	ID        string    `json:"id,omitempty"` // immutable, minted when the user is added
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	Created   time.Time `json:"created"`
	TokenHash string    `json:"-"`
}

// Share grants User (the grantee's id) access to Session; By is the granter's id.
type Share struct {
	Session string    `json:"session"`
	User    string    `json:"user"`
	Role    ShareRole `json:"role"`
	By      string    `json:"by"`
	Created time.Time `json:"created"`
}

// Errors the stores return.
var (
	ErrUserExists  = errors.New("user already exists")
	ErrNoSuchUser  = errors.New("no such user")
	ErrNoSuchShare = errors.New("no such share")
)

// Store keeps users, session owners and shares. The session stores implement it.
//
// Users are keyed by an immutable id the store mints (NewUserID) when the user is added;
// the name is a unique label among the present users. Owners and shares name user ids.
type Store interface {
	// AddUser keeps u under a new id (u.ID is ignored) and returns it as kept.
	AddUser(ctx context.Context, u User) (User, error) // ErrUserExists
	RemoveUser(ctx context.Context, name string) error // ErrNoSuchUser; their shares go too
	Users(ctx context.Context) ([]User, error)         // by name
	UserByToken(ctx context.Context, tokenHash string) (User, bool, error)
	// ClaimOwner makes user (an id) the session's owner unless it has one, and returns
	// the owner it has afterwards: the first claim wins, so two callers racing to start
	// the same new session cannot both own it.
	ClaimOwner(ctx context.Context, session, user string) (string, error)
	Owner(ctx context.Context, session string) (string, error)   // "" when none
	PutShare(ctx context.Context, s Share) error                 // replaces the user's share
	RemoveShare(ctx context.Context, session, user string) error // ErrNoSuchShare
	Shares(ctx context.Context, session string) ([]Share, error) // by user
	SharedWith(ctx context.Context, user string) ([]string, error)
	// ForgetSession removes a deleted session's owner and shares.
	ForgetSession(ctx context.Context, session string) error
}

// TokenPrefix starts every minted token, so a leaked one is recognisable by scanners.
const TokenPrefix = "ah_"

// NewToken mints a bearer token (256 random bits) and returns it with its hash.
func NewToken() (token, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token), nil
}

// HashToken is what the stores keep of a token. A plain sha256 is enough: the tokens are
// 256 random bits, so there is nothing to guess or to pre-compute, and lookup by hash
// leaks nothing about the token through timing.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// MaxNameLen bounds a user name; it is the loop's bound on a run's user (loop.MaxUserLen).
const MaxNameLen = 256

// CheckName checks a user name: 1–256 bytes of valid UTF-8 without control characters or
// leading or trailing space. A run's user is such a name, so the loop's rule holds too.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("user name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("user name of %d bytes, longer than %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return errors.New("user name is not valid UTF-8")
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("user name %q has leading or trailing space", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("user name %q has a control character", name)
		}
	}
	return nil
}

// CheckUser checks a user before a store keeps it.
func CheckUser(u User) error {
	if err := CheckName(u.Name); err != nil {
		return err
	}
	if IsID(u.Name) { // a name is resolved to an id wherever an id is also accepted
		return fmt.Errorf("user name %q has the shape of a user id", u.Name)
	}
	if _, err := ParseRole(string(u.Role)); err != nil {
		return err
	}
	if len(u.TokenHash) != sha256.Size*2 {
		return errors.New("user has no token hash")
	}
	return nil
}

// CheckShare checks a share before a store keeps it.
func CheckShare(s Share) error {
	if s.Session == "" {
		return errors.New("share names no session")
	}
	if err := CheckName(s.User); err != nil {
		return err
	}
	_, err := ParseShareRole(string(s.Role))
	return err
}
