module github.com/agenthost/agenthost/bench/eino

go 1.26.0

require github.com/agenthost/agenthost v0.0.0

require (
	github.com/bytedance/gopkg v0.1.3 // indirect
	github.com/bytedance/sonic v1.15.0 // indirect
	github.com/bytedance/sonic/loader v0.5.0 // indirect
	github.com/cloudwego/base64x v0.1.6 // indirect
	github.com/cloudwego/eino v0.7.36 // indirect
	github.com/klauspost/cpuid/v2 v2.2.9 // indirect
	github.com/twitchyliquid64/golang-asm v0.15.1 // indirect
	golang.org/x/arch v0.11.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/agenthost/agenthost => ../..
