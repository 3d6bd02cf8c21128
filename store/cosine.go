package store

import (
	"database/sql/driver"
	"sync"

	"modernc.org/sqlite"

	"github.com/agenthost/agenthost/memory"
)

// cosineSQL is the SQL function a vector search scores with (sqliteIndex.SearchScore):
// cosineSQL(vector, unit) is memory.CosineUnitEncoded of two blobs in memory.EncodeVector's
// form, 0 when either is not a blob or their lengths differ. Its arguments are read
// where SQLite keeps them (VolatileArgs: no copy, nothing kept past the call).
const cosineSQL = "agenthost_cosine_unit"

var registerCosine = sync.OnceValue(func() error {
	return sqlite.RegisterFunction(cosineSQL, &sqlite.FunctionImpl{
		NArgs:         2,
		Deterministic: true,
		VolatileArgs:  true,
		Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			b, ok1 := args[0].([]byte)
			u, ok2 := args[1].([]byte)
			if !ok1 || !ok2 {
				return 0.0, nil
			}
			return memory.CosineUnitEncoded(b, u), nil
		},
	})
})
