// Table sizes. 64 entries hold the largest Table 3 scenario (16 slices x 4 port blocks).
#ifndef _SIZE_P4_
#define _SIZE_P4_
#define SLICE_CLASSIFIER_SIZE 64
#endif
