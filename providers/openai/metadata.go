package openai

import (
	"fmt"
	"net/url"

	sdk "github.com/openai/openai-go/v3"
)

// hostedAPI is OpenAI's own API host, which refuses a request's metadata unless the
// request also asks it to store the completion ("The 'metadata' parameter is only
// allowed when 'store' is enabled").
const hostedAPI = "api.openai.com"

// metaPolicy is what a request does with the run's metadata (agenthost run --meta, the
// API's metadata; providers.Metadata.Extra). Chat Completions has a place for it, the
// request's `metadata` (16 pairs at most, keys up to 64 characters, values up to 512:
// the server says so when a run passes more).
//
//   - option store = "true": the request carries `store: true` and the metadata, so the
//     completion is kept by OpenAI and found by its metadata in the dashboard. Storing
//     is the user's choice to make, never a side effect of --meta.
//   - otherwise, to a server other than OpenAI's own (Ollama, vLLM, a LiteLLM proxy,
//     which reads it): the metadata, and no `store`. Servers that have no use for it
//     ignore the field.
//   - otherwise (OpenAI's API, no store): no metadata, since that API refuses it without
//     store and the run would fail for a label.
type metaPolicy struct {
	store bool // options.store = "true"
	send  bool // metadata goes in the request
}

func newMetaPolicy(store, baseURL string) (metaPolicy, error) {
	switch store {
	case "", "false":
	case "true":
		return metaPolicy{store: true, send: true}, nil
	default:
		return metaPolicy{}, fmt.Errorf("openai: store %q: want true or false", store)
	}
	hosted := baseURL == ""
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() == hostedAPI {
		hosted = true
	}
	return metaPolicy{send: !hosted}, nil
}

// apply puts the run's metadata (and store) on the request as the policy says.
func (m metaPolicy) apply(p *sdk.ChatCompletionNewParams, extra map[string]string) {
	if m.store {
		p.Store = sdk.Bool(true)
	}
	if m.send && len(extra) > 0 {
		p.Metadata = extra
	}
}
