/* One epoch of k-best batch MIRA (mlmm.rerank.mira), compiled: the loop over sentences is
 * sequential (each update moves the weights and the BLEU background the next sentence sees), so
 * numpy can vectorise only within a sentence, and its per-call overhead then dominates. This is
 * the same loop as mlmm.rerank._numpy_epoch, step for step; the sentence BLEU takes the fourth
 * root of the four precisions' product where numpy sums four logs (equal to rounding).
 *
 * epoch(features, stats, sizes, order, w, totals, background, c, decay)
 *     -> (updates, loss summed over updates)
 *   features   float64 (n, k, d), C-contiguous, read
 *   stats      float64 (n, k, 9): matches 1-4, totals 1-4, reference length, read
 *   sizes      int64 (n): the hypotheses kept per sentence (the rest is padding), read
 *   order      int64 (m): the sentences to visit, in order, read
 *   w, totals  float64 (d): weights and their running sum over updates, updated in place
 *   background float64 (9): the decaying pseudo-document's statistics, updated in place
 * Arrays come through the buffer protocol (numpy needs no headers here); shapes are checked.
 *
 * SOURCE_SHA256: the sha256 of this file as setup.py compiled it, so that mlmm.rerank can tell
 * an editable install's stale build (the source changed since) and run the numpy loop instead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef MLMM_SOURCE_SHA256
#define MLMM_SOURCE_SHA256 "unknown"
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define N_STATS 9
#define ORDER 4

/* Sentence BLEU of one hypothesis's statistics added to the background, times the reference
 * length (Chiang et al. 2008, as Moses' kbmira and mlmm.rerank.background_bleu). */
static double background_bleu(const double *stat, const double *background) {
    double total[N_STATS];
    for (int j = 0; j < N_STATS; j++) total[j] = stat[j] + background[j];
    double matches = 1.0, counts = 1.0;
    for (int n = 0; n < ORDER; n++) {
        matches *= total[n];
        counts *= total[ORDER + n];
    }
    const double ratio = matches / counts; /* the four precisions' product: one division */
    const double brevity = 1.0 - total[2 * ORDER] / total[ORDER];
    /* the geometric mean of the four precisions, sqrt(sqrt(.)) = exp(log(.) / 4) */
    const double bleu = sqrt(sqrt(ratio)) * total[2 * ORDER];
    return brevity < 0.0 ? bleu * exp(brevity) : bleu;
}

static int check(Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t items, const char *name) {
    if (view->len != itemsize * items) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zd", name, view->len,
                     itemsize * items);
        return 0;
    }
    return 1;
}

static PyObject *epoch(PyObject *self, PyObject *args) {
    Py_buffer feats_view, stats_view, sizes_view, order_view, w_view, totals_view, bg_view;
    double c, decay;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*w*dd", &feats_view, &stats_view, &sizes_view,
                          &order_view, &w_view, &totals_view, &bg_view, &c, &decay))
        return NULL;
    PyObject *result = NULL;
    double *bleu = NULL, *score = NULL, *diff = NULL;
    const Py_ssize_t d = w_view.len / (Py_ssize_t)sizeof(double);
    const Py_ssize_t n = sizes_view.len / (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t m = order_view.len / (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t k = n && d ? feats_view.len / (Py_ssize_t)sizeof(double) / n / d : 0;
    if (!check(&feats_view, sizeof(double), n * k * d, "features") ||
        !check(&stats_view, sizeof(double), n * k * N_STATS, "stats") ||
        !check(&totals_view, sizeof(double), d, "totals") ||
        !check(&bg_view, sizeof(double), N_STATS, "background"))
        goto done;
    const double *features = feats_view.buf, *stats = stats_view.buf;
    const int64_t *sizes = sizes_view.buf, *order = order_view.buf;
    double *w = w_view.buf, *totals = totals_view.buf, *background = bg_view.buf;
    bleu = malloc(sizeof(double) * (k ? k : 1));
    score = malloc(sizeof(double) * (k ? k : 1));
    diff = malloc(sizeof(double) * (d ? d : 1));
    if (!bleu || !score || !diff) {
        PyErr_NoMemory();
        goto done;
    }
    long updates = 0;
    double total_loss = 0.0;
    for (Py_ssize_t visit = 0; visit < m; visit++) {
        const int64_t i = order[visit];
        if (i < 0 || i >= n || sizes[i] < 0 || sizes[i] > k) {
            PyErr_Format(PyExc_IndexError, "sentence %lld of %zd", (long long)i, n);
            goto done;
        }
        const double *f = features + i * k * d, *s = stats + i * k * N_STATS;
        Py_ssize_t hope = 0, fear = 0;
        for (Py_ssize_t j = 0; j < sizes[i]; j++) {
            double sc = 0.0;
            for (Py_ssize_t x = 0; x < d; x++) sc += f[j * d + x] * w[x];
            score[j] = sc;
            bleu[j] = background_bleu(s + j * N_STATS, background);
            /* first maximum on ties, as numpy's argmax */
            if (j == 0 || sc + bleu[j] > score[hope] + bleu[hope]) hope = j;
            if (j == 0 || sc - bleu[j] > score[fear] - bleu[fear]) fear = j;
        }
        if (sizes[i] == 0 || hope == fear || bleu[hope] <= bleu[fear]) continue;
        double margin = 0.0, norm = 0.0;
        for (Py_ssize_t x = 0; x < d; x++) {
            diff[x] = f[hope * d + x] - f[fear * d + x];
            margin += diff[x] * w[x];
            norm += diff[x] * diff[x];
        }
        const double loss = bleu[hope] - bleu[fear] - margin;
        if (loss > 0.0) {
            double eta = loss / norm;
            if (eta > c) eta = c;
            for (Py_ssize_t x = 0; x < d; x++) {
                w[x] += eta * diff[x];
                totals[x] += w[x];
            }
            updates++;
            total_loss += loss;
        }
        for (int j = 0; j < N_STATS; j++)
            background[j] = background[j] * decay + s[hope * N_STATS + j];
    }
    result = Py_BuildValue("(ld)", updates, total_loss);
done:
    free(bleu);
    free(score);
    free(diff);
    PyBuffer_Release(&feats_view);
    PyBuffer_Release(&stats_view);
    PyBuffer_Release(&sizes_view);
    PyBuffer_Release(&order_view);
    PyBuffer_Release(&w_view);
    PyBuffer_Release(&totals_view);
    PyBuffer_Release(&bg_view);
    return result;
}

static PyMethodDef methods[] = {
    {"epoch", epoch, METH_VARARGS, "One epoch of k-best batch MIRA (mlmm.rerank)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mira_epoch", NULL, -1, methods};

PyMODINIT_FUNC PyInit__mira_epoch(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE_SHA256", MLMM_SOURCE_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
