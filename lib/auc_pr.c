/* SPDX-License-Identifier: Apache-2.0 */
/* auc_pr.c - the area under the precision-recall curve of a ranking (auc_pr.h). */
#include "lib/auc_pr.h"

#include <math.h>
#include <stdlib.h>

/* One row as the sweep sees it. */
typedef struct {
    double key; /* the score; -Inf for NaN, so that every row without a score ties */
    unsigned char positive;
} ranked_row;

/* qsort order: descending key (no NaN is left to compare). */
static int by_key_desc(const void *pa, const void *pb) {
    const ranked_row *a = pa, *b = pb;
    return (a->key < b->key) - (a->key > b->key);
}

/* The sweep: rows in descending score, one group of equal scores at a time; after each
 * group, its threshold's precision and recall, and the two areas grow by the step from
 * the previous point. */
int auc_pr(const double *score, const unsigned char *positive, size_t n, auc_pr_result *out) {
    ranked_row *rows = malloc((n ? n : 1) * sizeof *rows);
    if (!rows)
        return -1;
    size_t n_pos = 0;
    for (size_t i = 0; i < n; i++) {
        rows[i].key = isnan(score[i]) ? -INFINITY : score[i];
        rows[i].positive = positive[i] != 0;
        n_pos += rows[i].positive;
    }
    qsort(rows, n, sizeof *rows, by_key_desc);

    size_t tp = 0, fp = 0, levels = 0;
    double ap = 0, trap = 0, r_prev = 0, p_prev = 1;
    for (size_t j = 0; j < n;) {
        double t = rows[j].key;
        for (; j < n && rows[j].key == t; j++) {
            tp += rows[j].positive;
            fp += !rows[j].positive;
        }
        levels++;
        if (n_pos == 0)
            continue;
        double r = (double)tp / (double)n_pos, p = (double)tp / (double)(tp + fp);
        ap += (r - r_prev) * p;
        trap += (r - r_prev) * (p + p_prev) / 2;
        r_prev = r, p_prev = p;
    }
    free(rows);
    *out = (auc_pr_result){n, n_pos, levels, n_pos ? ap : NAN, n_pos ? trap : NAN};
    return 0;
}
