/* The relative position bias (layers/relative_position.h). */
#include "layers/relative_position.h"

#include <math.h>
#include <stddef.h>

int ted_relative_bucket(int relative, ted_bucket_rule rule)
{
    int buckets = rule.buckets, bucket = 0, distance;
    if (rule.bidirectional) {
        buckets /= 2;
        bucket = relative > 0 ? buckets : 0;
        distance = relative < 0 ? -relative : relative;
    } else {
        distance = relative < 0 ? -relative : 0;
    }
    int max_exact = buckets / 2;
    if (distance < max_exact)
        return bucket + distance;
    /* float, as transformers computes it: log(distance / max_exact) /
     * log(max_distance / max_exact) * (buckets - max_exact), truncated */
    float ratio = logf((float)distance / (float)max_exact) /
                  (float)log((double)rule.max_distance / max_exact);
    float scaled = ratio * (float)(buckets - max_exact);
    int large = max_exact + (int)scaled;
    return bucket + (large < buckets - 1 ? large : buckets - 1);
}

int ted_bucket_reach(ted_bucket_rule rule)
{
    return rule.max_distance > rule.buckets ? rule.max_distance : rule.buckets;
}

void ted_fill_buckets(int *buckets, int reach, ted_bucket_rule rule)
{
    for (int r = -reach; r <= reach; r++)
        buckets[r + reach] = ted_relative_bucket(r, rule);
}

void ted_add_position_bias(float *scores, const ted_position_bias *bias, int head, int query,
                           int count)
{
    int reach = bias->reach;
    for (int j = 0; j < count; j++) {
        int r = j - query;
        r = r < -reach ? -reach : r > reach ? reach : r;
        scores[j] += bias->table[(size_t)bias->buckets[r + reach] * bias->heads + head];
    }
}
