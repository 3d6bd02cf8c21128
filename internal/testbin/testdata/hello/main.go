// Command hello prints its greeting: the smallest binary testbin's tests build.
package main

import "fmt"

func main() { fmt.Println("hello from testbin") }
