package sharding

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Slots is how many equal ranges server-side mode cuts the 64-bit hash
// space into: the unit a member owns and a join moves. A slot is one bit of
// a slotSet.
const Slots = 64

// slotShift maps a hash to its slot: the top six bits.
const slotShift = 64 - 6

// slotSet is a set of slots, bit i for slot i.
type slotSet uint64

func (s slotSet) has(slot int) bool { return s&(1<<slot) != 0 }
func (s slotSet) len() int          { return bits.OnesCount64(uint64(s)) }

// each returns the slots in order.
func (s slotSet) each() []int {
	out := make([]int, 0, s.len())
	for s != 0 {
		i := bits.TrailingZeros64(uint64(s))
		out = append(out, i)
		s &^= 1 << i
	}
	return out
}

// String is the slots as ranges, "0-20,42": the form of the Lease
// annotations.
func (s slotSet) String() string {
	var parts []string
	all := s.each()
	for i := 0; i < len(all); {
		j := i
		for j+1 < len(all) && all[j+1] == all[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(all[i]))
		} else {
			parts = append(parts, strconv.Itoa(all[i])+"-"+strconv.Itoa(all[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseSlots parses what slotSet.String writes.
func parseSlots(v string) (slotSet, error) {
	var s slotSet
	if v == "" {
		return 0, nil
	}
	for part := range strings.SplitSeq(v, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b >= Slots || a > b {
			return 0, fmt.Errorf("slot range %q of %q: want n or n-m with 0 <= n <= m < %d", part, v, Slots)
		}
		for i := a; i <= b; i++ {
			s |= 1 << i
		}
	}
	return s, nil
}

// slotRecord is a slot annotation of a member Lease: the slots and the
// member process (Lease holder) they are meant for or served by. A record
// for another holder than the Lease's current one was written for a former
// process of the identity and counts as empty.
type slotRecord struct {
	holder string
	slots  slotSet
}

func (r slotRecord) String() string { return r.holder + ":" + r.slots.String() }

// parseRecord parses "<holder>:<slots>"; "" is the empty record.
func parseRecord(v string) (slotRecord, error) {
	if v == "" {
		return slotRecord{}, nil
	}
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return slotRecord{}, fmt.Errorf("slot record %q: want <holder>:<slots>", v)
	}
	s, err := parseSlots(v[i+1:])
	if err != nil {
		return slotRecord{}, err
	}
	return slotRecord{holder: v[:i], slots: s}, nil
}

// ParseSlotRecord parses the value of a member Lease's SlotsAnnotation or
// ServingAnnotation, "<holder>:<ranges>" (for example
// "rs-1_3f2a9c1d0b7e:0-20,42"), into the holder it was written for and the
// slots, in order. "" is no record: no holder, no slots.
func ParseSlotRecord(value string) (holder string, slots []int, err error) {
	r, err := parseRecord(value)
	if err != nil {
		return "", nil, fmt.Errorf("sharding: %w", err)
	}
	return r.holder, r.slots.each(), nil
}

// SlotsAnnotation is the annotation of a member Lease in which the sharder
// of a server-side ring writes the slots assigned to the member:
// shard.ctrlkit.dev/<ring>-slots, "<holder>:<slots>".
func SlotsAnnotation(ring string) string { return labelPrefix + ring + slotsSuffix }

// ServingAnnotation is the annotation of a member Lease in which a member
// of a server-side ring writes the slots it reconciles:
// shard.ctrlkit.dev/<ring>-serving, "<holder>:<slots>".
func ServingAnnotation(ring string) string { return labelPrefix + ring + servingSuffix }

// HashField is the object field a server-side ring hashes, as the API
// server's shard selectors name it.
type HashField string

const (
	// HashUID hashes an object's UID: the finest balance; children do not
	// follow their owner (their UIDs hash elsewhere).
	HashUID HashField = "object.metadata.uid"
	// HashNamespace hashes an object's namespace: a namespace is the unit
	// of balance, and children follow their owner.
	HashNamespace HashField = "object.metadata.namespace"
)

// SlotOf returns the slot (0 to Slots-1) of the value a server-side ring
// hashes (an object's UID, or its namespace under HashNamespace): the top
// bits of its 64-bit FNV-1a hash, the API server's shard hash. With the
// member Leases' ServingAnnotation it tells which member reconciles an
// object.
func SlotOf(value string) int { return slotOf(value) }

// slotOf is SlotOf.
func slotOf(value string) int {
	h := fnv.New64a()
	_, _ = h.Write([]byte(value))
	return int(h.Sum64() >> slotShift)
}

// slotSelector is the shard selector of one slot over field.
func slotSelector(field HashField, slot int) string {
	start := uint64(slot) << slotShift
	end := fmt.Sprintf("0x%016x", uint64(slot+1)<<slotShift)
	if slot == Slots-1 {
		end = "0x10000000000000000" // 2^64, the selector's open upper bound
	}
	return fmt.Sprintf("shardRange(%s, '0x%016x', '%s')", field, start, end)
}

// selectors are the shard selectors of the slots of s.
func (s slotSet) selectors(field HashField) []string {
	out := make([]string, 0, s.len())
	for _, i := range s.each() {
		out = append(out, slotSelector(field, i))
	}
	return out
}

// balanceSlots returns the target assignment of the slots to the live
// members, moving as few as it can from current (each live member's assigned
// slots): every member ends with its weight's share of the slots (weights:
// MemberWeight, 1 if missing; equal weights give Slots/N or one more),
// members keep their lowest slots up to their quota, and the freed and
// unassigned slots go, in slot order, to the members under quota. The result
// depends only on its arguments, so every sharder computes the same.
func balanceSlots(current map[string]slotSet, live []string, weights map[string]int) map[string]slotSet {
	out := make(map[string]slotSet, len(live))
	if len(live) == 0 {
		return out
	}
	live = slices.Sorted(slices.Values(live))
	weight := func(m string) int { return min(max(weights[m], 1), MaxWeight) }
	total := 0
	for _, m := range live {
		total += weight(m)
	}
	// Each member's exact share is Slots*w/total; the slots the floors leave
	// go to the largest remainders, then to the members holding most now, so
	// fewer move.
	quota := map[string]int{}
	left := Slots
	for _, m := range live {
		quota[m] = Slots * weight(m) / total
		left -= quota[m]
	}
	order := slices.Clone(live)
	slices.SortStableFunc(order, func(a, b string) int {
		if ra, rb := Slots*weight(a)%total, Slots*weight(b)%total; ra != rb {
			return rb - ra
		}
		return current[b].len() - current[a].len()
	})
	for _, m := range order[:left] {
		quota[m]++
	}
	var taken slotSet
	for _, m := range order {
		for _, i := range (current[m] &^ taken).each() {
			if out[m].len() == quota[m] {
				break
			}
			out[m] |= 1 << i
			taken |= 1 << i
		}
	}
	free := ^taken
	for _, m := range live {
		for out[m].len() < quota[m] && free != 0 {
			i := bits.TrailingZeros64(uint64(free))
			out[m] |= 1 << i
			free &^= 1 << i
		}
	}
	return out
}

// everySlot is a shard selector matching every object: the probe of
// ServesShardSelector.
const everySlot = "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"

// ServesShardSelector asks the API server whether it serves
// ListOptions.ShardSelector (its ShardedListAndWatch gate): it lists at most
// one Lease of namespace with a selector and looks for metadata.shardInfo
// in the answer. A server without the gate ignores the field and answers
// without it; only a typed (or unstructured) list carries it, never the
// metadata client's. The ring needs list on Leases anyway.
func ServesShardSelector(ctx context.Context, client kubernetes.Interface, namespace string) (bool, error) {
	list, err := client.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{Limit: 1, ShardSelector: everySlot})
	if err != nil {
		return false, fmt.Errorf("sharding: probing the API server for shard selectors (list leases in %s): %w", namespace, err)
	}
	return list.ShardInfo != nil, nil
}
