package host

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/agenthost/agenthost/loop"
	"github.com/agenthost/agenthost/manifest"
	"github.com/agenthost/agenthost/providers"
)

// modelStreamer is the part of *providers.Client the loop needs; tests and the
// in-process scripted provider satisfy it too.
type modelStreamer interface {
	Stream(ctx context.Context, req *providers.ChatRequest) (providers.EventStream, error)
}

// providerModel adapts a provider client to loop.Model.
type providerModel struct {
	client modelStreamer
	model  string
}

// NewProviderModel is the loop.Model the host makes of a started provider: model names
// the model when a request does not. Exported for bench/ (the loop step through the
// provider subprocess), which measures exactly what a run through the host pays.
func NewProviderModel(client *providers.Client, model string) loop.Model {
	return &providerModel{client: client, model: model}
}

func (m *providerModel) Stream(ctx context.Context, req loop.Request) (loop.Stream, error) {
	pr := toChatRequest(req)
	if pr.Model == "" {
		pr.Model = m.model
	}
	st, err := m.client.Stream(ctx, pr)
	if err != nil {
		return nil, toModelError(err)
	}
	return &providerStream{st: st}, nil
}

type providerStream struct{ st providers.EventStream }

func (s *providerStream) Recv() (loop.Delta, error) {
	for {
		ev, err := s.st.Recv()
		if err != nil {
			return loop.Delta{}, toModelError(err)
		}
		d := loop.Delta{Seq: int(ev.GetSeq())}
		switch e := ev.GetEvent().(type) {
		case *providers.EventText:
			d.Kind, d.Text = loop.DeltaText, e.Text
		case *providers.EventReasoning:
			d.Kind, d.Text = loop.DeltaReasoning, e.Reasoning
		case *providers.EventToolCall:
			tc := e.ToolCall
			d.Kind = loop.DeltaToolCall
			d.ToolCall = &loop.ToolCallDelta{Index: int(tc.GetIndex()), ID: tc.GetId(), Name: tc.GetName(), Arguments: tc.GetArguments()}
		case *providers.EventUsage:
			u := e.Usage
			d.Kind = loop.DeltaUsage
			d.Usage = &loop.Usage{PromptTokens: int(u.GetPromptTokens()), CompletionTokens: int(u.GetCompletionTokens()),
				TotalTokens: int(u.GetTotalTokens()), CostUSD: u.GetCostUsd(),
				CacheReadTokens: int(u.GetCacheReadTokens()), CacheWriteTokens: int(u.GetCacheWriteTokens())}
		case *providers.EventReasoningState:
			d.Kind, d.Text = loop.DeltaReasoningState, e.ReasoningState
		case *providers.EventFinish:
			d.Kind, d.StopReason = loop.DeltaFinish, e.Finish.GetStopReason()
		default:
			continue // an event kind this host does not know: skip it
		}
		return d, nil
	}
}

func (s *providerStream) Close() error { s.st.Close(); return nil }

// toModelError maps the provider's typed errors onto the loop's. The end of a stream
// (io.EOF), context errors and untyped errors pass through unchanged: the loop treats an
// untyped error as a retryable transport error.
func toModelError(err error) error {
	var pe *providers.Error
	if !errors.As(err, &pe) {
		return err
	}
	me := &loop.ModelError{Kind: loop.ErrorKind(pe.Kind), Message: pe.Message, Retryable: pe.Retryable, RetryAfter: pe.RetryAfter,
		Status: pe.Status}
	if pe.Process != 0 {
		return &processFailure{ModelError: me, process: pe.Process}
	}
	return me
}

// processFailure is a model error that the adapter process's failure caused, with the
// process's number (providers.Error.Process). The loop sees the *loop.ModelError inside
// (errors.As) and retries it; the breaker sees the number and counts one crash once,
// however many calls were streaming on the process (breaker.go).
type processFailure struct {
	*loop.ModelError
	process uint64
}

func (e *processFailure) Unwrap() error { return e.ModelError }

// failedProcess is the number of the adapter process whose failure err is, or 0.
func failedProcess(err error) uint64 {
	var pf *processFailure
	if errors.As(err, &pf) {
		return pf.process
	}
	return 0
}

func toChatRequest(r loop.Request) *providers.ChatRequest {
	out := &providers.ChatRequest{
		Model:          r.Model,
		ToolChoice:     r.ToolChoice,
		ResponseFormat: string(r.ResponseFormat),
		MaxTokens:      int64(r.MaxTokens),
		Metadata: &providers.Metadata{Session: r.Metadata.SessionID, Run: r.Metadata.RunID,
			CallIndex: int64(r.Metadata.CallIndex), Extra: r.Metadata.Extra},
	}
	if r.PromptCacheKey != "" { // opaque to the provider: a hash of the agent and session
		sum := sha256.Sum256([]byte(r.PromptCacheKey))
		out.PromptCache = &providers.PromptCache{Enabled: true, Key: "agenthost-" + hex.EncodeToString(sum[:12])}
	}
	for _, m := range r.Messages {
		pm := &providers.Message{Role: string(m.Role), ToolCallId: m.ToolCallID, Name: m.Name, Reasoning: m.Reasoning,
			ReasoningState: m.ReasoningState}
		for _, p := range m.Content {
			pm.Content = append(pm.Content, toPart(p))
		}
		for _, c := range m.ToolCalls {
			pm.ToolCalls = append(pm.ToolCalls, &providers.ToolCall{Id: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out.Messages = append(out.Messages, pm)
	}
	for _, t := range r.Tools {
		out.Tools = append(out.Tools, &providers.Tool{Name: t.Name, Description: t.Description, InputSchema: string(t.InputSchema)})
	}
	return out
}

// toPart maps a loop part; an image given as a data: URL travels as bytes, and so do
// the attachments the loop loaded for the call (Data).
func toPart(p loop.Part) *providers.Part {
	switch p.Type {
	case loop.PartAudio:
		return &providers.Part{Type: providers.PartAudio, Data: p.Data, MediaType: p.MimeType, Name: p.Name}
	case loop.PartFile:
		return &providers.Part{Type: providers.PartFile, Data: p.Data, MediaType: p.MimeType, Name: p.Name}
	case loop.PartImage:
	default:
		return &providers.Part{Type: providers.PartText, Text: p.Text}
	}
	if p.Data != nil {
		return &providers.Part{Type: providers.PartImage, ImageData: p.Data, MediaType: p.MimeType, Name: p.Name}
	}
	if rest, ok := strings.CutPrefix(p.URL, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok && strings.HasSuffix(meta, ";base64") {
			if b, err := base64.StdEncoding.DecodeString(data); err == nil {
				return &providers.Part{Type: providers.PartImage, ImageData: b, MediaType: strings.TrimSuffix(meta, ";base64")}
			}
		}
	}
	return &providers.Part{Type: providers.PartImage, ImageUrl: p.URL, MediaType: p.MimeType}
}

// providerOptions resolves option values that name files (the scripted provider's
// script) against the manifest's directory: the adapter runs elsewhere.
func providerOptions(m *manifest.Manifest, name string, pc manifest.ProviderConfig) map[string]string {
	out := make(map[string]string, len(pc.Options))
	for k, v := range pc.Options {
		if k == "script" && v != "" {
			v = m.Resolve(v)
		}
		out[k] = v
	}
	return out
}
