/* SPDX-License-Identifier: Apache-2.0 */
/* ctx_test.c - backend selection, thread count, error messages and shape checks. */
#include "testutil.h"

#include <string.h>

static void test_backend_names(void **state) {
    (void)state;
    tsm_backend b;
    assert_int_equal(tsm_backend_parse("cpu", &b), 0);
    assert_int_equal(b, TSM_BACKEND_CPU);
    assert_int_equal(tsm_backend_parse("cuda", &b), 0);
    assert_int_equal(b, TSM_BACKEND_CUDA);
    assert_int_equal(tsm_backend_parse("auto", &b), 0);
    assert_int_equal(b, TSM_BACKEND_AUTO);
    assert_int_equal(tsm_backend_parse("gpu", &b), -1);
    assert_string_equal(tsm_backend_name(TSM_BACKEND_CPU), "cpu");
    assert_string_equal(tsm_status_name(TSM_EINVAL), "invalid argument");
}

/* AUTO resolves to a concrete backend and says why when it is not CUDA. */
static void test_auto_resolves(void **state) {
    (void)state;
    tsm_ctx *ctx = NULL;
    const char *why = NULL;
    assert_int_equal(tsm_ctx_new(&ctx, TSM_BACKEND_AUTO, &why), TSM_OK);
    tsm_backend b = tsm_ctx_backend(ctx);
    assert_true(b == TSM_BACKEND_CPU || b == TSM_BACKEND_CUDA);
    if (b == TSM_BACKEND_CPU)
        assert_non_null(why);
    tsm_ctx_destroy(&ctx);
    assert_null(ctx);
    tsm_ctx_destroy(&ctx); /* idempotent */
}

/* Asking for CUDA where there is none fails cleanly with a reason. */
static void test_cuda_request(void **state) {
    (void)state;
    tsm_ctx *ctx = (tsm_ctx *)state;
    const char *why = NULL;
    tsm_status st = tsm_ctx_new(&ctx, TSM_BACKEND_CUDA, &why);
    if (st == TSM_OK) {
        assert_int_equal(tsm_ctx_backend(ctx), TSM_BACKEND_CUDA);
        tsm_ctx_destroy(&ctx);
        return;
    }
    assert_int_equal(st, TSM_EBACKEND);
    assert_null(ctx);
    assert_non_null(why);
    assert_true(strlen(why) > 10);
}

static void test_errors_and_threads(void **state) {
    (void)state;
    tsm_ctx *ctx = NULL;
    assert_int_equal(tsm_ctx_new(&ctx, TSM_BACKEND_CPU, NULL), TSM_OK);
    assert_string_equal(tsm_ctx_error(ctx), "");
    assert_int_equal(tsm_fail(ctx, TSM_EINVAL, "bad %s %d", "thing", 7), TSM_EINVAL);
    assert_string_equal(tsm_ctx_error(ctx), "bad thing 7");
    assert_int_equal(tsm_check_shape(ctx, 10, 2, 2), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "m = 2"));
    assert_int_equal(tsm_check_shape(ctx, 10, 11, 11), TSM_EINVAL);
    assert_int_equal(tsm_check_shape(ctx, 10, 5, 0), TSM_EINVAL);
    assert_int_equal(tsm_check_shape(ctx, 10, 10, 10), TSM_OK);
    tsm_ctx_set_threads(ctx, 1);
    assert_int_equal(tsm_ctx_threads(ctx), 1);
    tsm_ctx_set_threads(ctx, 0);
    assert_true(tsm_ctx_threads(ctx) >= 1);
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_names),
        cmocka_unit_test(test_auto_resolves),
        cmocka_unit_test(test_cuda_request),
        cmocka_unit_test(test_errors_and_threads),
    };
    return cmocka_run_group_tests_name("ctx", tests, NULL, NULL);
}
