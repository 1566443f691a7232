package cli

import (
	"testing"
)

func TestLocalPath(t *testing.T) {
	tests := []struct{ url, want string }{
		{"sqlite:///abs/c.db", "/abs/c.db"},
		{"sqlite:///.cairn/cairn.db", ".cairn/cairn.db"},
		{"sqlite:rel/c.db", "rel/c.db"},
		{"sqlite:rel%20dir/c.db", "rel dir/c.db"},
		{"file:///abs/dir", "/abs/dir"},
		{"file:///./dir", "./dir"},
		{"file://localhost/abs/dir", "/abs/dir"},
		{"file://otherhost/abs/dir", ""},
		{"postgres://127.0.0.1/db", ""},
		{"memory:", ""},
		{"::", ""},
	}
	for _, tt := range tests {
		if got := LocalPath(tt.url); got != tt.want {
			t.Errorf("LocalPath(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
