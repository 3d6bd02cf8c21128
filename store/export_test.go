package store

// RaceReseal makes f run between Reseal's read of each batch and its compare-and-set,
// told the table ("entries", "kv", "memories").
func RaceReseal(s *SQLite, f func(table string)) { s.race = f }
