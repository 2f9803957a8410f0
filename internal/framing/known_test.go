package framing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMembersSplitKnown(t *testing.T) {
	var vals [][]byte
	for _, v := range []string{`{"name":"a"}`, `{"name":"b"}`, `1`, `"s"`, `{"name":`, ` {"name":"c"}`} {
		vals = append(vals, []byte(v))
	}
	known := NewKnown(vals)
	tests := []struct {
		name string
		obj  string
		want []int
	}{
		{name: "in order", obj: `{"tools":[{"name":"a"},{"name":"b"}]}`, want: []int{0, 1}},
		{name: "out of order", obj: `{"tools":[{"name":"b"},{"name":"a"}]}`, want: []int{1, 0}},
		{name: "an unknown one between", obj: `{"tools":[{"name":"a"},{"name":"x"},{"name":"b"}]}`, want: []int{0, -1, 1}},
		{name: "with spaces", obj: `{"tools":[ {"name":"a"} , {"name":"b"} ]}`, want: []int{0, 1}},
		{name: "a number that goes on", obj: `{"tools":[{"name":"b"},12]}`, want: []int{1, -1}},
		{name: "a number", obj: `{"tools":[{"name":"b"},1]}`, want: []int{1, 2}},
		{name: "not whole values are never known", obj: `{"tools":[{"name":"c"}]}`, want: []int{-1}},
		{name: "empty", obj: `{"tools":[]}`, want: []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members, err := MembersSplitKnown([]byte(tt.obj), func(string) bool { return true }, known)
			require.NoError(t, err)
			require.Len(t, members, 1)
			assert.Equal(t, tt.want, members[0].Known)
			plain, err := MembersSplit([]byte(tt.obj), func(string) bool { return true })
			require.NoError(t, err)
			assert.Equal(t, plain[0].Elements, members[0].Elements)
			assert.Nil(t, plain[0].Known)
		})
	}
}

// FuzzMembersSplitKnown checks that recognising known values changes
// nothing MembersSplit returns, whatever the values (whole or not, found
// anywhere in the object or not), and that each value it names has the
// bytes of its element.
func FuzzMembersSplitKnown(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a"},{"name":"b"},1,"x"]}`), []byte{10, 22, 23, 35, 36, 37, 38, 41})
	f.Add([]byte(`{"tools":[12,1,true,[1]],"t":[1]}`), []byte{10, 12, 13, 14, 10, 11})
	f.Add([]byte(`{"a":[{"x":"\"}"},{"x":"\"}"}]}`), []byte{6, 18, 19, 31})
	f.Fuzz(func(t *testing.T, obj, cuts []byte) {
		var vals [][]byte
		for i := 0; i+1 < len(cuts) && len(vals) < 16; i += 2 {
			a, b := int(cuts[i]), int(cuts[i+1])
			if a <= b && b <= len(obj) {
				vals = append(vals, obj[a:b])
			}
		}
		all := func(string) bool { return true }
		want, wantErr := MembersSplit(obj, all)
		got, err := MembersSplitKnown(obj, all, NewKnown(vals))
		require.Equal(t, wantErr, err)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, want[i].Value, got[i].Value)
			require.Equal(t, want[i].Elements, got[i].Elements)
			if want[i].Elements == nil {
				continue
			}
			require.Len(t, got[i].Known, len(got[i].Elements))
			for k, j := range got[i].Known {
				if j >= 0 {
					assert.Equal(t, string(vals[j]), string(got[i].Elements[k]))
				}
			}
		}
	})
}
