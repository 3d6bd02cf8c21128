package main

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// decoder decodes YAML or JSON into the registered API types, strictly.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err) // the API packages' own registrations: cannot fail
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// Check renders the kustomization in dir and decodes each object strictly; it returns
// each object as "Kind/name (apiVersion)", in kustomize's order, or the first errors.
func Check(dir string) ([]string, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []string
	var errs []error
	for _, r := range m.Resources() {
		id := r.GetKind() + "/" + r.GetName()
		y, err := r.AsYAML()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		if err := Decode(y); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", id, r.GetApiVersion()))
	}
	if len(m.Resources()) == 0 {
		errs = append(errs, fmt.Errorf("kustomize build %s: no objects", dir))
	}
	return out, errors.Join(errs...)
}

// Decode decodes one object strictly into its API type.
func Decode(y []byte) error {
	_, _, err := decoder.Decode(y, nil, nil)
	return err
}
