// SPDX-License-Identifier: GPL-2.0
/* The baseline of bench/xdp_cost.py: an XDP program that does nothing but pass. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
