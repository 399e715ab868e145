package main

// The layout of a Go type as spew prints it (`layout [podtemplate|imagepulljobtemplate]`): every
// named and composite type reachable from v1.PodTemplateSpec (or kruise's ImagePullJobTemplate), with its printed name, its kind and, for structs, the
// fields in declaration order with their JSON names. src/compat/spew.rs walks a JSON object with
// it to print what hashutil.DeepHashObject prints for the Go object the JSON decodes to.

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"

	kruise "gofixtures/kruisev1beta1"
	v1 "k8s.io/api/core/v1"
)

type field struct {
	Name   string `json:"name"`
	JSON   string `json:"json,omitempty"`
	Inline bool   `json:"inline,omitempty"`
	Type   string `json:"type"`
}

type node struct {
	Print  string  `json:"print"`
	Kind   string  `json:"kind"`
	Elem   string  `json:"elem,omitempty"`
	Key    string  `json:"key,omitempty"`
	Fields []field `json:"fields,omitempty"`
}

// Types spew prints from their unexported internals; src/compat/spew.rs knows each by name.
var special = map[string]string{
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "quantity",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": "intorstring",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":       "time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":   "fieldsv1",
}

func key(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Ptr:
		return "*" + key(t.Elem())
	case reflect.Slice:
		return "[]" + key(t.Elem())
	case reflect.Map:
		return "map[" + key(t.Key()) + "]" + key(t.Elem())
	}
	return t.String()
}

func walk(t reflect.Type, out map[string]node) string {
	k := key(t)
	if _, ok := out[k]; ok {
		return k
	}
	n := node{Print: t.String()}
	if s, ok := special[k]; ok {
		n.Kind = s
		out[k] = n
		return k
	}
	out[k] = n // placeholder against cycles
	switch t.Kind() {
	case reflect.Struct:
		n.Kind = "struct"
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.PkgPath != "" {
				panic("unexported field in " + k + ": " + f.Name)
			}
			tag := f.Tag.Get("json")
			name := strings.Split(tag, ",")[0]
			fl := field{Name: f.Name, Type: walk(f.Type, out)}
			switch {
			case name == "-":
			case name == "" && f.Anonymous:
				fl.Inline = true
			case name == "":
				fl.JSON = f.Name
			default:
				fl.JSON = name
			}
			n.Fields = append(n.Fields, fl)
		}
	case reflect.Ptr:
		n.Kind = "ptr"
		n.Elem = walk(t.Elem(), out)
	case reflect.Slice:
		n.Kind = "slice"
		n.Elem = walk(t.Elem(), out)
	case reflect.Map:
		n.Kind = "map"
		n.Key = walk(t.Key(), out)
		n.Elem = walk(t.Elem(), out)
	case reflect.String:
		n.Kind = "string"
	case reflect.Bool:
		n.Kind = "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.Kind = "int"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n.Kind = "uint"
	case reflect.Float32:
		n.Kind = "float32"
	case reflect.Float64:
		n.Kind = "float64"
	default:
		panic("unsupported kind in " + k + ": " + t.Kind().String())
	}
	out[k] = n
	return k
}

func layout(which string) {
	out := map[string]node{}
	var root string
	switch which {
	case "", "podtemplate":
		root = walk(reflect.TypeOf(v1.PodTemplateSpec{}), out)
	case "imagepulljobtemplate":
		root = walk(reflect.TypeOf(kruise.ImagePullJobTemplate{}), out)
	default:
		panic("unknown layout " + which)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	_ = enc.Encode(map[string]interface{}{"root": root, "types": out})
}
