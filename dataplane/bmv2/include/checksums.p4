// IPv4 header checksums: verified on nothing (a bad checksum is the receiver's
// business), recomputed for every option-less IPv4 header (ECN marking changes one).
#ifndef SLICING_CHECKSUMS_P4
#define SLICING_CHECKSUMS_P4

#include "headers.p4"

control SlicingVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SlicingComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.inner_ipv4.isValid() && hdr.inner_ipv4.ihl == 5,
            { hdr.inner_ipv4.version, hdr.inner_ipv4.ihl, hdr.inner_ipv4.dscp,
              hdr.inner_ipv4.ecn, hdr.inner_ipv4.total_len, hdr.inner_ipv4.identification,
              hdr.inner_ipv4.flags, hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.ttl,
              hdr.inner_ipv4.protocol, hdr.inner_ipv4.src_addr, hdr.inner_ipv4.dst_addr },
            hdr.inner_ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.ue_ipv4.isValid() && hdr.ue_ipv4.ihl == 5,
            { hdr.ue_ipv4.version, hdr.ue_ipv4.ihl, hdr.ue_ipv4.dscp, hdr.ue_ipv4.ecn,
              hdr.ue_ipv4.total_len, hdr.ue_ipv4.identification, hdr.ue_ipv4.flags,
              hdr.ue_ipv4.frag_offset, hdr.ue_ipv4.ttl, hdr.ue_ipv4.protocol,
              hdr.ue_ipv4.src_addr, hdr.ue_ipv4.dst_addr },
            hdr.ue_ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

#endif
