package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/loop"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// runFlags are the flags of agenthost run.
type runFlags struct {
	provider, session, approve string
	logLevel                   string
	watch, jsonOut, newSession bool
	noTools                    bool
	outputSchema, toolChoice   string
	system                     string
	allowedTools, meta         []string
	maxIterations              int
	agentName, user            string
	mcpPrompt                  string
	promptArgs                 []string
	attach                     []string
}

func newRunCmd() *cobra.Command {
	var o runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT... | -",
		Short: "Run the agent on a prompt (or continue a session with --session)",
		Long: `Run the agent declared in the manifest on PROMPT and stream what happens.

The prompt is the words given, or stdin with "-" (or when stdin is not a terminal and
no words are given). --session continues a stored session; an id that is not stored is
an error unless --new says to start it.

Tool calls that need approval are asked on the terminal (--approve ask, reading stdin:
y allows the call, s allows the tool for the rest of the session, h8 allows it for
--user for 8 hours (any number of hours), anything else refuses);
with no terminal, --approve all allows them and --approve none refuses them. A question
that finds stdin at its end stops the run with exit 2 and keeps the session.

Exit status: 0 completed, 1 failed or incomplete, 2 usage or manifest error,
130 interrupted (Ctrl-C aborts the run and keeps the session).`,
		Example: `  agenthost run "What is 17*23 + 19*29?"
  agenthost run --provider scripted --json "hello" | jq -r .type
  git diff | agenthost run --system "Review this diff." -
  agenthost run --session ses_0123abcd "and the sum of both?"
  agenthost run --approve all --tools calc --max-iterations 5 "What is 2^10?"
  agenthost run --prompt docs/summarise --prompt-arg topic=billing
  agenthost run --attach report.pdf --attach chart.png "What changed since last quarter?"
  agenthost --locked run "hello"                  # oci:// plugins only as agent.lock pins them`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.provider, "provider", "", "use this [providers.NAME] instead of agent.provider")
	f.StringVar(&o.agentName, "agent", "", "start the run with this agent ([agents.NAME]; default the [agent] table's)")
	f.StringVar(&o.session, "session", "", "continue this session")
	f.StringVar(&o.mcpPrompt, "prompt", "", "start from an MCP server's prompt (SERVER/NAME, or NAME when one server has prompts); the words given follow it")
	f.StringArrayVar(&o.promptArgs, "prompt-arg", nil, "KEY=VALUE argument of --prompt (repeatable)")
	f.StringVar(&o.user, "user", os.Getenv("AGENTHOST_USER"), "who the run is for: memories and preferences are per user (default $AGENTHOST_USER; none: anonymous)")
	f.BoolVar(&o.jsonOut, "json", false, "print events as JSON Lines instead of a transcript")
	f.StringVar(&o.approve, "approve", "ask", "tool calls needing approval: ask, all or none")
	f.BoolVar(&o.newSession, "new", false, "with --session: start a session with that id")
	f.StringVar(&o.outputSchema, "output-schema", "", "a JSON Schema file: the final answer must be JSON matching it")
	f.StringSliceVar(&o.allowedTools, "tools", nil, "offer only these tools (comma-separated)")
	f.BoolVar(&o.noTools, "no-tools", false, "tools off for this run: none offered, a call the model makes anyway refused")
	f.StringVar(&o.toolChoice, "tool-choice", "", "first model call: auto, none, required or a tool's name")
	f.IntVar(&o.maxIterations, "max-iterations", 0, "model calls before the run is summarised (default: the manifest's)")
	f.StringVar(&o.system, "system", "", "use this system prompt for the run instead of the manifest's")
	f.StringArrayVar(&o.meta, "meta", nil, "KEY=VALUE metadata passed to the provider (repeatable)")
	f.StringArrayVar(&o.attach, "attach", nil, "send this file with the prompt: a PDF, an image, audio (wav, mp3), text (repeatable)")
	f.BoolVar(&o.watch, "watch", false, "after the run, wait for a plugin's .wasm to change, reload it and run the prompt again")
	f.StringVar(&o.logLevel, "log-level", "info", "show plugin logs at this level and above (debug, info, notice, warning, error, …, or off); --json prints them all")
	return cmd
}

// run is agenthost run: check the flags, open the host, run the prompt (again and
// again with --watch).
func (o *runFlags) run(cmd *cobra.Command, args []string) error {
	prompt, err := o.prompt(cmd, args)
	if err != nil {
		return err
	}
	base, err := runControls(cmd, o.outputSchema, o.toolChoice, o.system, o.allowedTools, o.meta, o.maxIterations)
	base.User, base.ToolsOff = o.user, o.noTools
	if err != nil {
		return usage(err)
	}
	attach, err := readAttachments(o.attach)
	if err != nil {
		return usage(err)
	}
	if prompt == "" && o.session == "" && o.mcpPrompt == "" && len(attach) == 0 {
		return usage(errors.New("run needs a PROMPT (or --session ID to continue one, or --prompt NAME)"))
	}
	if o.watch && prompt == "" {
		return usage(errors.New("--watch needs a PROMPT to run again"))
	}
	approver, err := newApprover(o.approve, cmd.InOrStdin(), cmd.ErrOrStderr())
	if err != nil {
		return usage(err)
	}
	minLevel, err := parseLogLevel(o.logLevel)
	if err != nil {
		return usage(err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := host.Open(ctx, host.Options{OnCompile: compileNote(cmd), Manifest: manifestPath(cmd), Lock: lockMode(cmd), Provider: o.provider, Approver: approver,
		Stderr: providerLog(cmd), OnSignIn: signInNote(cmd)})
	if err != nil {
		return err
	}
	defer h.Close()
	warn(cmd, h)
	if err := o.prepare(ctx, h, &base); err != nil {
		return err
	}
	session := o.session
	for {
		base.SessionID = session
		ask, _ := approver.(*askApprover)
		code := runOnce(ctx, cmd, h, promptMessage(prompt, attach), base, o.jsonOut, minLevel, ask)
		if !o.watch || ctx.Err() != nil {
			return code
		}
		if !nextReload(ctx, cmd, h) {
			return nil
		}
		session = "" // each run of the prompt is a session of its own
	}
}

// prompt is the words given, or stdin with "-" (or when stdin is not a terminal, no
// words are given and no session is continued).
func (o *runFlags) prompt(cmd *cobra.Command, args []string) (string, error) {
	prompt := strings.Join(args, " ")
	if prompt == "-" || (prompt == "" && o.session == "" && !isTerminal(cmd.InOrStdin())) {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 16<<20))
		if err != nil {
			return "", failed(fmt.Errorf("read the prompt from stdin: %w", err))
		}
		prompt = strings.TrimSpace(string(b))
	}
	return prompt, nil
}

// prepare completes the run's input from the open host: --agent (which must exist),
// --prompt's messages; and checks that the --session continued is stored (unless --new).
func (o *runFlags) prepare(ctx context.Context, h *host.Host, base *loop.RunInput) error {
	user, err := h.ResolveUser(ctx, base.User) // a present user's name means their id
	if err != nil {
		return failed(err)
	}
	base.User = user
	if o.agentName != "" {
		if _, ok := h.Manifest.AgentConfig(o.agentName); !ok {
			return usage(fmt.Errorf("--agent %q: no such agent (agents: %s)", o.agentName, strings.Join(h.Manifest.AgentNames(), ", ")))
		}
		base.Agent = o.agentName
	}
	if err := useMCPPrompt(ctx, h, o.mcpPrompt, o.promptArgs, base); err != nil {
		return err
	}
	if o.session != "" && !o.newSession {
		if es, err := h.Store.Load(ctx, o.session); err != nil {
			return failed(err)
		} else if len(es) == 0 {
			return usage(fmt.Errorf("no session %q in %s (--new starts one with that id)", o.session, h.Manifest.Store.Where()))
		}
	}
	return nil
}

// nextReload waits (--watch) until a plugin is rebuilt and reloaded; a reload that
// fails keeps the running plugins and waits again. False when ctx ends first.
func nextReload(ctx context.Context, cmd *cobra.Command, h *host.Host) bool {
	fmt.Fprintln(cmd.ErrOrStderr(), "watching the plugins; the prompt runs again when one is rebuilt (Ctrl-C stops)")
	names, err := h.NextReload(ctx, watchInterval)
	for err != nil && ctx.Err() == nil {
		fmt.Fprintln(cmd.ErrOrStderr(), "agenthost: watch: kept the running plugins:", err)
		names, err = h.NextReload(ctx, watchInterval)
	}
	if ctx.Err() != nil {
		return false
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "reloaded %s\n", strings.Join(names, ", "))
	return true
}

// compileNote prints one line on stderr before a plugin's first compile into the cache:
// without it the first command after a build sits silent for seconds (a Go plugin is
// several MB of Wasm). stderr, so --json output stays events only.
func compileNote(cmd *cobra.Command) func(file string) {
	return func(file string) {
		fmt.Fprintf(cmd.ErrOrStderr(), "compiling %s (first run; cached afterwards)\n", file)
	}
}

// providerLog sends provider logs to stderr when AGENTHOST_DEBUG is set.
func providerLog(cmd *cobra.Command) io.Writer {
	if os.Getenv("AGENTHOST_DEBUG") != "" {
		return cmd.ErrOrStderr()
	}
	return nil
}

func isTerminal(w any) bool {
	if sw, ok := w.(io.Writer); ok {
		w = underlying(sw)
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// newApprover answers approval requests: all approves, none rejects, ask prompts.
func newApprover(mode string, in io.Reader, prompt io.Writer) (loop.Approver, error) {
	switch mode {
	case "all":
		return fixedApprover{ok: true}, nil
	case "none":
		return fixedApprover{reason: "rejected by --approve none"}, nil
	case "ask":
		return &askApprover{in: bufio.NewReader(in), out: prompt}, nil
	}
	return nil, fmt.Errorf("--approve %q: want ask, all or none", mode)
}

type fixedApprover struct {
	ok     bool
	reason string
}

func (a fixedApprover) Approve(context.Context, loop.ToolCall) (loop.Approval, error) {
	return loop.Approval{Approved: a.ok, Reason: a.reason}, nil
}

// askApprover asks on the terminal, reading the answer from stdin. An input that ends
// before an answer (no terminal: stdin closed, /dev/null, a finished pipe) is not a
// "no": nobody was asked, so rejecting would hand the model a refusal the user never
// gave and end the run as if all went well. The run is interrupted instead
// (ErrApprovalPending: the call neither runs nor is rejected, the session is kept) and
// runOnce turns that into a usage error naming --approve.
type askApprover struct {
	mu      sync.Mutex
	in      *bufio.Reader
	out     io.Writer
	noInput bool   // an approval found stdin at its end
	tool    string // the tool of that approval, for the message
}

func (a *askApprover) Approve(ctx context.Context, c loop.ToolCall) (loop.Approval, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.noInput {
		return loop.Approval{}, loop.ErrApprovalPending
	}
	fmt.Fprintf(a.out, "? allow %s %s [y/s/hN/N] (s: %s for the rest of this session; h8: for you for 8 hours) ", c.Name, c.Arguments, c.Name)
	type reply struct {
		line string
		err  error
	}
	answer := make(chan reply, 1)
	go func() {
		line, err := a.in.ReadString('\n')
		answer <- reply{strings.TrimSpace(strings.ToLower(line)), err}
	}()
	select {
	case <-ctx.Done():
		return loop.Approval{}, ctx.Err()
	case r := <-answer:
		if r.line == "" && r.err != nil {
			fmt.Fprintln(a.out)
			a.noInput, a.tool = true, c.Name
			return loop.Approval{}, loop.ErrApprovalPending
		}
		return terminalAnswer(r.line), nil
	}
}

// unanswered is the usage error of a run that stopped because an approval found no
// input to read, or nil.
func (a *askApprover) unanswered(session string) error {
	if a == nil {
		a = &askApprover{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.noInput {
		return nil
	}
	return usage(fmt.Errorf("%s needs approval and there is no one to ask: stdin ended before an answer (no terminal). "+
		"Use --approve all to allow the calls that need approval, or --approve none to refuse them; "+
		"session %s is kept and --session continues it", a.tool, session))
}

// watchInterval is how often --watch looks at the plugin files.
const watchInterval = 300 * time.Millisecond

// runControls turns the per-run flags into a RunInput's controls.
func runControls(cmd *cobra.Command, schemaFile, toolChoice, system string, tools, meta []string, maxIterations int) (loop.RunInput, error) {
	var in loop.RunInput
	if schemaFile != "" {
		b, err := os.ReadFile(schemaFile)
		if err != nil {
			return in, fmt.Errorf("--output-schema: %w", err)
		}
		if !json.Valid(b) {
			return in, fmt.Errorf("--output-schema %s: not JSON", schemaFile)
		}
		in.OutputSchema = b
	}
	if cmd.Flags().Changed("tools") {
		in.AllowedTools = append([]string{}, tools...)
	}
	in.ToolChoice, in.SystemPromptOverride = toolChoice, system
	if maxIterations < 0 {
		return in, fmt.Errorf("--max-iterations %d: want 0 or more", maxIterations)
	}
	in.Limits.MaxIterations = maxIterations
	for _, kv := range meta {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return in, fmt.Errorf("--meta %q: want KEY=VALUE", kv)
		}
		if in.Metadata == nil {
			in.Metadata = map[string]string{}
		}
		in.Metadata[k] = v
	}
	return in, nil
}

// runOnce runs the prompt (or continues the session of in) and maps the result to an
// exit error.
func runOnce(ctx context.Context, cmd *cobra.Command, h *host.Host, prompt []loop.Message, in loop.RunInput, jsonOut bool, minLevel int, ask *askApprover) error {
	in.Messages = slices.Clone(in.Messages) // an MCP prompt's messages (--prompt), then the words and attachments
	in.Messages = append(in.Messages, prompt...)
	out := cmd.OutOrStdout()
	var render func(loop.Event)
	var t *transcript
	if jsonOut {
		render = jsonLines(out)
	} else {
		t = newTranscript(out, cmd.ErrOrStderr(), isTerminal(out), minLevel)
		defer t.stop()
		render = t.event
	}
	res, _ := h.Runner().RunWith(ctx, in, render)
	if !jsonOut {
		fmt.Fprintf(cmd.ErrOrStderr(), "session %s\n", res.SessionID)
	}
	if err := ask.unanswered(res.SessionID); err != nil {
		return err
	}
	switch res.Status {
	case loop.StatusCompleted:
		return nil
	case loop.StatusAborted:
		return &exitError{code: exitInterrupted, err: errors.New("interrupted; the session is kept")}
	case loop.StatusIncomplete:
		return &exitError{code: exitFailed}
	default:
		if t != nil && t.said(res.Err) {
			return &exitError{code: exitFailed} // the transcript's last line says it
		}
		return failed(res.Err)
	}
}

// useMCPPrompt puts an MCP server's prompt (run --prompt) at the start of the run's
// messages.
func useMCPPrompt(ctx context.Context, h *host.Host, ref string, kvs []string, in *loop.RunInput) error {
	if ref == "" {
		return nil
	}
	args := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usage(fmt.Errorf("--prompt-arg %q: want KEY=VALUE", kv))
		}
		args[k] = v
	}
	msgs, err := h.MCPPrompt(ctx, ref, args)
	if err != nil {
		return failed(err)
	}
	in.Messages = msgs
	return nil
}
