/* run_log.c — the files of --out that are not the checkpoint: losses.csv, written as the
 * run goes, and the pictures and summaries written at its end.
 *
 * losses.csv is the run's log. A line is appended per step (flushed with every progress
 * report and before every checkpoint), so `tail -f` follows a run and a killed run keeps
 * its log; the run holds no per-step record in memory, whatever its length. A resumed run
 * keeps the lines of the steps its checkpoint had done and appends after them: lines past
 * the checkpoint are steps that will be run again. loss.svg is drawn from the file at the
 * end, so it shows the whole run, resumed parts included.
 *
 * Every whole file (the kept part of the log, summaries, pictures) is written under a
 * temporary name and renamed into place, so a full disk or a kill leaves the previous file
 * as it was, never a truncated one; a failure says why (errno). */
#include "gpt_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SVG_POINTS 4000 /* a longer run is drawn from every k-th step */

FILE *gpt_out_open(const char *dir, const char *name, gpt_out *o, char *err) {
    snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%ld", o->path, (long)getpid());
    FILE *f = fopen(o->tmp, "w");
    if (!f) gpt_errf(err, "cannot write '%s': %s", o->tmp, strerror(errno));
    return f;
}

kiln_status gpt_out_close(FILE *f, const gpt_out *o, char *err) {
    errno = 0;
    bool bad = fflush(f) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) && !bad) bad = true, e = errno;
    if (!bad && rename(o->tmp, o->path)) bad = true, e = errno;
    if (!bad) return KILN_STATUS_OK;
    unlink(o->tmp);
    gpt_errf(err, "writing '%s' failed: %s (the previous file, if any, is kept)", o->path,
             e ? strerror(e) : "an output error");
    return KILN_STATUS_IO;
}

/* ------------------------------------------------------------ the log ---- */

/* One line of losses.csv: "step,loss,val_loss,ms", val_loss empty when not evaluated. */
static bool parse_line(const char *line, int64_t *step, double *loss, double *val) {
    char *e;
    errno = 0;
    long long s = strtoll(line, &e, 10);
    if (errno || e == line || *e != ',' || s < 1) return false;
    const char *p = e + 1;
    *loss = strtod(p, &e);
    if (e == p || *e != ',') return false;
    p = e + 1;
    *val = NAN;
    if (*p != ',') {
        *val = strtod(p, &e);
        if (e == p || *e != ',') return false;
    }
    *step = s;
    return true;
}

static const char header[] = "step,loss,val_loss,ms\n";

kiln_status gpt_log_open(gpt_log *l, const char *dir, int64_t keep_through, char *err) {
    memset(l, 0, sizeof *l);
    gpt_out o;
    FILE *w = gpt_out_open(dir, "losses.csv", &o, err);
    if (!w) return KILN_STATUS_IO;
    fputs(header, w);
    /* a resumed run keeps the steps its checkpoint has done, up to the first line that is
     * not whole (a kill mid-line) */
    FILE *old = keep_through > 0 ? fopen(o.path, "r") : NULL;
    char line[256];
    int64_t prev = 0;
    if (old && fgets(line, sizeof line, old) && !strcmp(line, header))
        while (fgets(line, sizeof line, old) && strchr(line, '\n')) {
            int64_t s;
            double a, b;
            if (!parse_line(line, &s, &a, &b) || s <= prev || s > keep_through) break;
            fputs(line, w);
            prev = s;
        }
    if (old) fclose(old);
    kiln_status st = gpt_out_close(w, &o, err);
    if (st) return st;
    memcpy(l->path, o.path, sizeof l->path);
    if (!(l->f = fopen(l->path, "a"))) {
        gpt_errf(err, "cannot append to '%s': %s", l->path, strerror(errno));
        return KILN_STATUS_IO;
    }
    return KILN_STATUS_OK;
}

kiln_status gpt_log_step(gpt_log *l, int64_t step, double loss, double val, double ms, char *err) {
    if (!l->f) return KILN_STATUS_OK;
    fprintf(l->f, "%lld,%.6f,", (long long)step, loss);
    if (!isnan(val)) fprintf(l->f, "%.6f", val);
    fprintf(l->f, ",%.3f\n", ms);
    if (!ferror(l->f)) return KILN_STATUS_OK;
    gpt_errf(err, "writing '%s' failed: %s", l->path, strerror(errno));
    return KILN_STATUS_IO;
}

kiln_status gpt_log_flush(gpt_log *l, char *err) {
    if (!l->f) return KILN_STATUS_OK;
    errno = 0;
    if (!fflush(l->f) && !ferror(l->f)) return KILN_STATUS_OK;
    gpt_errf(err, "writing '%s' failed: %s", l->path, errno ? strerror(errno) : "an output error");
    return KILN_STATUS_IO;
}

kiln_status gpt_log_close(gpt_log *l, char *err) {
    if (!l->f) return KILN_STATUS_OK;
    kiln_status st = gpt_log_flush(l, err);
    if (fclose(l->f) && !st) {
        gpt_errf(err, "writing '%s' failed: %s", l->path, strerror(errno));
        st = KILN_STATUS_IO;
    }
    l->f = NULL;
    return st;
}

/* --------------------------------------------------------- loss.svg ---- */

typedef struct curve {
    int64_t *step;
    double *loss, *val;
    int n;
} curve;

/* The log's steps, every k-th of them (and the last) when there are more than SVG_POINTS;
 * every validation point is kept where the stride allows. */
static kiln_status read_curve(const char *path, curve *c, char *err) {
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f) {
        gpt_errf(err, "cannot read '%s' back: %s", path, strerror(errno));
        return KILN_STATUS_IO;
    }
    char line[256];
    int64_t lines = 0, s;
    double a, b;
    while (fgets(line, sizeof line, f)) lines += parse_line(line, &s, &a, &b);
    int64_t stride = lines > SVG_POINTS ? (lines + SVG_POINTS - 1) / SVG_POINTS : 1;
    size_t cap = (size_t)(lines / stride + 2);
    c->step = malloc(cap * sizeof *c->step);
    c->loss = malloc(cap * sizeof *c->loss), c->val = malloc(cap * sizeof *c->val);
    if (!c->step || !c->loss || !c->val) {
        fclose(f);
        gpt_errf(err, "out of host memory drawing loss.svg");
        return KILN_STATUS_HOST_OOM;
    }
    rewind(f);
    int64_t i = 0;
    while (fgets(line, sizeof line, f) && (size_t)c->n < cap)
        if (parse_line(line, &s, &a, &b) && (i++ % stride == 0 || i == lines))
            c->step[c->n] = s, c->loss[c->n] = a, c->val[c->n++] = b;
    fclose(f);
    return KILN_STATUS_OK;
}

static void curve_free(curve *c) {
    free(c->step), free(c->loss), free(c->val);
}

/* A "nice" tick step: 1, 2 or 5 times a power of ten, about span / 5. */
static double tick_step(double span) {
    double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

static void draw(FILE *f, const curve *c) {
    const double W = 720, H = 420, L = 70, R = 20, TOP = 40, BOT = 60;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < c->n; i++) {
        double v[2] = {c->loss[i], c->val[i]};
        for (int k = 0; k < 2; k++)
            if (isfinite(v[k])) lo = fmin(lo, v[k]), hi = fmax(hi, v[k]);
    }
    if (!(lo < hi)) lo = isfinite(lo) ? lo - 1 : 0, hi = isfinite(hi) ? hi + 1 : 1;
    double ystep = tick_step(hi - lo);
    lo = floor(lo / ystep) * ystep, hi = ceil(hi / ystep) * ystep;
    double x0 = c->n ? (double)c->step[0] : 1, x1 = c->n > 1 ? (double)c->step[c->n - 1] : x0 + 1;
    double xstep = tick_step(x1 - x0 > 1 ? x1 - x0 : 1);
#define PX(s) (L + ((double)(s)-x0) / (x1 - x0) * (W - L - R))
#define PY(v) (TOP + (hi - (v)) / (hi - lo) * (H - TOP - BOT))
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%g\" y=\"22\" font-size=\"15\">kiln train: loss (cross-entropy, nats "
            "per byte)</text>\n",
            W, H, L);
    for (double y = lo; y <= hi + ystep / 2; y += ystep)
        fprintf(f,
                "<line x1=\"%g\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                L, W - R, PY(y), PY(y), L - 6, PY(y) + 4, y);
    for (double x = ceil(x0 / xstep) * xstep; x <= x1; x += xstep)
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\" stroke=\"#333\"/>"
                "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g</text>\n",
                PX(x), PX(x), H - BOT, H - BOT + 5, PX(x), H - BOT + 19, x);
    fprintf(f,
            "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"#333\"/>"
            "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"#333\"/>\n"
            "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">step</text>\n"
            "<text transform=\"translate(18 %g) rotate(-90)\" text-anchor=\"middle\">loss</text>\n",
            L, W - R, H - BOT, H - BOT, L, L, TOP, H - BOT, (L + W - R) / 2, H - 18,
            (TOP + H - BOT) / 2);
    const char *colour[2] = {"#1f77b4", "#d62728"};
    for (int k = 0; k < 2; k++) {
        const double *v = k ? c->val : c->loss;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" points=\"", colour[k],
                k ? "2" : "1.2");
        for (int i = 0; i < c->n; i++)
            if (isfinite(v[i])) fprintf(f, "%.1f,%.1f ", PX(c->step[i]), PY(v[i]));
        fprintf(f, "\"/>\n");
        for (int i = 0; k && i < c->n; i++)
            if (isfinite(v[i]))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                        PX(c->step[i]), PY(v[i]), colour[1]);
        fprintf(f,
                "<line x1=\"%g\" x2=\"%g\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>"
                "<text x=\"%g\" y=\"%d\">%s</text>\n",
                W - R - 170, W - R - 145, 52 + 18 * k, 52 + 18 * k, colour[k], W - R - 140,
                56 + 18 * k, k ? "validation loss" : "training loss");
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
}

kiln_status gpt_log_svg(const char *dir, char *err) {
    curve c;
    char path[4200];
    snprintf(path, sizeof path, "%s/losses.csv", dir);
    kiln_status st = read_curve(path, &c, err);
    gpt_out o;
    FILE *f = st ? NULL : gpt_out_open(dir, "loss.svg", &o, err);
    if (f) {
        draw(f, &c);
        st = gpt_out_close(f, &o, err);
    } else if (!st)
        st = KILN_STATUS_IO;
    curve_free(&c);
    return st;
}
