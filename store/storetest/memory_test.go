package storetest_test

import (
	"testing"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/store/storetest"
)

func TestMemoryStoreConforms(t *testing.T) {
	storetest.Run(t, func(*testing.T) loop.SessionStore { return loop.NewMemoryStore() })
}
