// Types of the "agenthost" module, which the JS runtime plugin provides to a tool's
// bundle (docs/javascript.md). Every function but tool() and guard() reaches the host:
// call them from a handler, not at the top level of the file. A capability the
// manifest does not grant (kv, model, allowed_hosts) ends the call with the host's
// refusal.

declare module "agenthost" {
  /** A JSON Schema object (the tool's inputSchema). */
  export type JSONSchema = { [key: string]: unknown };

  /** An MCP content block. */
  export type Content =
    | { type: "text"; text: string }
    | { type: "image"; data: string; mimeType: string };

  /** An MCP CallToolResult, returned as it is when a handler returns one. */
  export interface CallToolResult {
    content: Content[];
    isError?: boolean;
    structuredContent?: unknown;
    _meta?: { [key: string]: unknown };
  }

  /**
   * A handler's value: a string is the result's text; undefined or null an empty text;
   * a CallToolResult is taken as it is; any other JSON value is its JSON, as text and
   * as structuredContent. A thrown error is an isError result with its stack.
   */
  export type ToolValue = string | null | undefined | CallToolResult | unknown;

  export interface ToolDefinition<Args = any> {
    /** Unique in the bundle: a second tool of the same name fails the load. */
    name: string;
    description?: string;
    /** Defaults to {"type":"object"}. The host checks arguments against it before the call. */
    inputSchema?: JSONSchema;
    handler(args: Args): ToolValue | Promise<ToolValue>;
  }

  /** Declares a tool. Call it at the top level of the bundle, once per tool. */
  export function tool<Args = any>(def: ToolDefinition<Args>): void;

  export interface GuardInput {
    stage: "input" | "output" | "tool_args" | "tool_result";
    content: string;
    tool?: string;
  }
  export interface GuardResult {
    action: "allow" | "block" | "redact";
    reason?: string;
    content?: string;
  }
  /** Registers the bundle's guardrail (kind = "guardrail"): once, at the top level. */
  export function guard(fn: (input: GuardInput) => GuardResult | Promise<GuardResult>): void;

  /** Any JSON: the hooks' inputs and answers are plugins/sdk/ABI.md's, as they are. */
  type Hook = (input: any) => unknown;
  /** kind = "termination", export on_step: {verdict: "" | "stop", reason?, message?}. */
  export function onStep(fn: Hook): void;
  /** kind = "termination", export before_final: {verdict: "" | "continue", reason?, message?}. */
  export function beforeFinal(fn: Hook): void;
  /** kind = "context", export context_build: {messages?, compact?, state?}. */
  export function contextBuild(fn: Hook): void;
  /** kind = "permission", export permit: {decision: "allow" | "deny" | "ask", reason?}. */
  export function permit(fn: Hook): void;
  /** kind = "evaluator", export grade: {pass, score?, reason?}. */
  export function grade(fn: Hook): void;

  /** The plugin's key-value store (permissions.kv = true), shared by its instances and sessions. */
  export const kv: {
    get(key: string): string | null;
    set(key: string, value: string): void;
    delete(key: string): void;
  };

  /** The manifest's permissions.config values. */
  export const config: {
    get(key: string): string | undefined;
  };

  export interface FetchOptions {
    method?: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS";
    headers?: { [name: string]: string };
    body?: string;
  }
  /** HTTP through the host: only permissions.allowed_hosts are reachable, redirects included. */
  export const http: {
    fetch(url: string, options?: FetchOptions): { status: number; body: string };
  };

  /**
   * Files, within permissions.allowed_paths only: paths are the guest's (the mount
   * points the manifest names, e.g. "/data/notes.txt"). A path outside every mount, a
   * symlink out of one, or a write to a "ro:" mount throws.
   */
  export const fs: {
    /** The file as UTF-8 text; invalid bytes become U+FFFD. */
    readFile(path: string): string;
    readFileBytes(path: string): Uint8Array;
    /** Creates or truncates the file: a string is written as UTF-8. */
    writeFile(path: string, data: string | Uint8Array | ArrayBuffer): void;
    readdir(path: string): { name: string; isDirectory: boolean }[];
  };

  /** Log lines: plugin_log events of the run. */
  export const log: {
    debug(message: string): void;
    info(message: string): void;
    warn(message: string): void;
    warning(message: string): void;
    error(message: string): void;
  };

  /** A progress event of the run; total 0 means unknown. */
  export function progress(progress: number, total: number, message?: string): void;

  /**
   * Sends a piece of the call's result as it comes (a long search's hits, a command's
   * output): during a run each piece is a tool_result_delta event, shown live and never
   * stored; under `mcp serve` a progress notification carrying it; under `plugins call`
   * it is printed to stderr. The value the handler returns is still the call's result,
   * whole: return all of it, not the part not yet streamed. An empty string sends
   * nothing; a run with guardrails shows no pieces.
   */
  export function streamResult(text: string): void;

  export interface SamplingMessage {
    role: "user" | "assistant";
    content: { type: "text"; text: string };
  }
  export interface CreateMessageRequest {
    messages: SamplingMessage[];
    systemPrompt?: string;
    maxTokens: number;
  }
  export interface CreateMessageResult {
    role: "assistant";
    content: { type: "text"; text: string };
    model?: string;
    stopReason?: string;
  }
  /** Asks the run's model (permissions.model = true), through the run's guardrails and budget. */
  export function createMessage(request: CreateMessageRequest): CreateMessageResult;

  /** The call being served: the model's call id (calls are at least once: key effects by it). */
  export function callMeta(): { callId: string; sessionId: string; runId: string };
}
