package sdk

import (
	"fmt"
	"strconv"
)

// ConfigInt reads an integer from the plugin's config (permissions.config),
// def when the key is absent. A value that is not an integer is an error
// naming the key, so a typo in the manifest is not silently ignored.
func ConfigInt(key string, def int) (int, error) {
	s, ok := Config(key)
	if !ok || s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("config %s = %q: not an integer", key, s)
	}
	return n, nil
}

// ConfigFloat reads a number from the plugin's config, def when absent.
func ConfigFloat(key string, def float64) (float64, error) {
	s, ok := Config(key)
	if !ok || s == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("config %s = %q: not a number", key, s)
	}
	return f, nil
}
