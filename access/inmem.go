package access

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// InMemory is a Store in the process's memory: for tests and for a host whose sessions
// are not stored.
type InMemory struct {
	mu     sync.Mutex
	users  map[string]User
	owners map[string]string
	shares map[string]map[string]Share // session → user → share
}

var _ Store = (*InMemory)(nil)

func (m *InMemory) init() {
	if m.users == nil {
		m.users, m.owners, m.shares = map[string]User{}, map[string]string{}, map[string]map[string]Share{}
	}
}

func (m *InMemory) AddUser(_ context.Context, u User) (User, error) {
	if err := CheckUser(u); err != nil {
		return User{}, err
	}
	id, err := NewUserID()
	if err != nil {
		return User{}, err
	}
	u.ID = id
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if _, ok := m.users[u.Name]; ok {
		return User{}, ErrUserExists
	}
	m.users[u.Name] = u
	return u, nil
}

func (m *InMemory) RemoveUser(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	u, ok := m.users[name]
	if !ok {
		return ErrNoSuchUser
	}
	delete(m.users, name)
	for _, byUser := range m.shares {
		delete(byUser, u.ID)
	}
	return nil
}

func (m *InMemory) Users(context.Context) ([]User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]User, 0, len(m.users))
	for _, u := range m.users {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b User) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *InMemory) UserByToken(_ context.Context, hash string) (User, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.users {
		if u.TokenHash == hash {
			return u, true, nil
		}
	}
	return User{}, false, nil
}

func (m *InMemory) ClaimOwner(_ context.Context, session, user string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if o, ok := m.owners[session]; ok {
		return o, nil
	}
	m.owners[session] = user
	return user, nil
}

func (m *InMemory) Owner(_ context.Context, session string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owners[session], nil
}

func (m *InMemory) PutShare(_ context.Context, s Share) error {
	if err := CheckShare(s); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if m.shares[s.Session] == nil {
		m.shares[s.Session] = map[string]Share{}
	}
	m.shares[s.Session][s.User] = s
	return nil
}

func (m *InMemory) RemoveShare(_ context.Context, session, user string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.shares[session][user]; !ok {
		return ErrNoSuchShare
	}
	delete(m.shares[session], user)
	return nil
}

func (m *InMemory) Shares(_ context.Context, session string) ([]Share, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Share{}
	for _, s := range m.shares[session] {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Share) int { return strings.Compare(a.User, b.User) })
	return out, nil
}

func (m *InMemory) SharedWith(_ context.Context, user string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []string{}
	for session, byUser := range m.shares {
		if _, ok := byUser[user]; ok {
			out = append(out, session)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m *InMemory) ForgetSession(_ context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.owners, session)
	delete(m.shares, session)
	return nil
}
