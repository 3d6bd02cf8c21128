//go:build wasip1

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// request is the v2 envelope of a prompt, resource or completion request.
type request[T any] struct {
	Request T `json:"request"`
}

func decode[T any](input []byte, export string) (T, error) {
	var in request[T]
	if err := json.Unmarshal(input, &in); err != nil {
		return in.Request, fmt.Errorf("%s: input is not {\"request\":{…}}: %w", export, err)
	}
	return in.Request, nil
}

func handleListPrompts([]byte) ([]byte, error) {
	return []byte(`{"prompts":[
	  {"name":"test_simple_prompt","description":"A prompt with no arguments"},
	  {"name":"test_prompt_with_arguments","description":"A prompt with two required arguments",
	   "arguments":[{"name":"arg1","description":"First test argument","required":true},{"name":"arg2","description":"Second test argument","required":true}]},
	  {"name":"test_prompt_with_embedded_resource","description":"A prompt embedding a resource",
	   "arguments":[{"name":"resourceUri","description":"URI of the resource to embed","required":true}]},
	  {"name":"test_prompt_with_image","description":"A prompt holding an image"}]}`), nil
}

type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

func text(s string) map[string]string { return map[string]string{"type": "text", "text": s} }

func handleGetPrompt(input []byte) ([]byte, error) {
	req, err := decode[struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}](input, "get_prompt")
	if err != nil {
		return nil, err
	}
	var msgs []message
	switch req.Name {
	case "test_simple_prompt":
		msgs = []message{{"user", text("This is a simple prompt for testing.")}}
	case "test_prompt_with_arguments":
		msgs = []message{{"user", text(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Arguments["arg1"], req.Arguments["arg2"]))}}
	case "test_prompt_with_embedded_resource":
		msgs = []message{{"user", map[string]any{"type": "resource", "resource": map[string]string{
			"uri": req.Arguments["resourceUri"], "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
			{"user", text("Please process the embedded resource above.")}}
	case "test_prompt_with_image":
		msgs = []message{{"user", map[string]string{"type": "image", "data": pngPixel, "mimeType": "image/png"}},
			{"user", text("Please analyze the image above.")}}
	default:
		return nil, fmt.Errorf("get_prompt: no prompt %q", req.Name)
	}
	return json.Marshal(map[string]any{"messages": msgs})
}

func handleListResources([]byte) ([]byte, error) {
	return []byte(`{"resources":[
	  {"uri":"test://static-text","name":"static-text","description":"A static text resource","mimeType":"text/plain"},
	  {"uri":"test://static-binary","name":"static-binary","description":"A static binary resource (a PNG)","mimeType":"image/png"},
	  {"uri":"test://watched-resource","name":"watched-resource","description":"A resource clients may subscribe to","mimeType":"text/plain"}]}`), nil
}

func handleListResourceTemplates([]byte) ([]byte, error) {
	return []byte(`{"resourceTemplates":[
	  {"uriTemplate":"test://template/{id}/data","name":"template-data","description":"Data for an id","mimeType":"application/json"}]}`), nil
}

var templateURI = regexp.MustCompile(`^test://template/([^/]+)/data$`)

func handleReadResource(input []byte) ([]byte, error) {
	req, err := decode[struct {
		URI string `json:"uri"`
	}](input, "read_resource")
	if err != nil {
		return nil, err
	}
	c := map[string]string{"uri": req.URI}
	switch req.URI {
	case "test://static-text":
		c["mimeType"], c["text"] = "text/plain", "This is the content of the static text resource."
	case "test://static-binary":
		c["mimeType"], c["blob"] = "image/png", pngPixel
	case "test://watched-resource":
		c["mimeType"], c["text"] = "text/plain", "Watched resource content."
	default:
		m := templateURI.FindStringSubmatch(req.URI)
		if m == nil {
			return nil, fmt.Errorf("read_resource: no resource %q", req.URI)
		}
		data, _ := json.Marshal(map[string]any{"id": m[1], "templateTest": true, "data": "Data for ID: " + m[1]})
		c["mimeType"], c["text"] = "application/json", string(data)
	}
	return json.Marshal(map[string]any{"contents": []map[string]string{c}})
}

// suggestions are what completion/complete offers per argument; values that start
// with what the user typed come back.
var suggestions = map[string][]string{
	"ref/prompt test_prompt_with_arguments arg1": {"paris", "park", "party", "test", "testing"},
	"ref/prompt test_prompt_with_arguments arg2": {"world", "word", "work"},
	"ref/resource test://template/{id}/data id":  {"1", "12", "123"},
}

func handleComplete(input []byte) ([]byte, error) {
	req, err := decode[struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"argument"`
	}](input, "complete")
	if err != nil {
		return nil, err
	}
	values := []string{}
	for _, v := range suggestions[req.Ref.Type+" "+req.Ref.Name+req.Ref.URI+" "+req.Argument.Name] {
		if strings.HasPrefix(v, req.Argument.Value) {
			values = append(values, v)
		}
	}
	return json.Marshal(map[string]any{"completion": map[string]any{"values": values, "total": len(values), "hasMore": false}})
}
