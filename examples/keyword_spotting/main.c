/* main.c: keyword spotting from raw audio on a microcontroller, with two models compiled by tractile.
 *
 * frontend     TFLite Micro's micro_speech audio front end streamed by hops of FRONTEND_PULSE (320)
 *              samples: each call takes one hop of 16 kHz int16 audio and gives the 40 int8
 *              features of the last 30 ms window (its first FRONTEND_DELAY outputs come before the
 *              first whole window and are dropped); its noise estimate and sample buffer live in
 *              its context.
 * micro_speech the keyword model: 49 frames of 40 features -> scores for silence, unknown, yes, no.
 *
 * The last 49 feature frames are kept in a ring buffer; every EVERY frames (and at the end of a
 * recording) they are copied, oldest first, into the keyword model's input, which lives in its
 * arena, and the model runs. The recordings are in audio.h (written by build.py); the console
 * and clock come from tractile's emulator platform layer (tl_platform.h). Lines printed:
 *
 *   r REC                          a recording starts (the front end is reset)
 *   l REC FRAME LABEL s0 s1 s2 s3  the keyword model's label and scores after FRAME frames
 *   h TICKS HOPS                   clock ticks in the front end over all hops
 *   m TICKS RUNS                   clock ticks in the keyword model over all its runs
 *   k TICKS                        ticks of the calibration loop; s BYTES peak stack; b ... sizes
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "audio.h"
#include "frontend.h"
#include "micro_speech.h"
#include "tl_platform.h"

#define FEATURES 40
#define FRAMES 49
#define EVERY 4

static const char *const labels[] = {"silence", "unknown", "yes", "no"};

static frontend_ctx front;
static micro_speech_ctx speech;
static int8_t ring[FRAMES][FEATURES];

static void put_int(int64_t value) {
  char text[24];
  int at = 23;
  uint64_t magnitude = value < 0 ? (uint64_t)(-(value + 1)) + 1u : (uint64_t)value;
  text[at] = 0;
  do {
    text[--at] = (char)('0' + (int)(magnitude % 10u));
    magnitude /= 10u;
  } while (magnitude);
  if (value < 0) text[--at] = '-';
  tl_write(text + at);
}

/* the keyword model on the ring's frames, oldest (at `next`) first; its label */
static int spot(int32_t next, int8_t *scores, uint64_t *ticks) {
  int8_t *input = MICRO_SPEECH_INPUT0_IN(&speech);
  int32_t frame, best = 0, label;
  uint64_t start;
  for (frame = 0; frame < FRAMES; ++frame) memcpy(input + frame * FEATURES, ring[(next + frame) % FRAMES], FEATURES);
  start = tl_clock();
  micro_speech_invoke(&speech, input, scores);
  *ticks += tl_clock() - start;
  for (label = 1; label < MICRO_SPEECH_OUTPUT0_COUNT; ++label)
    if (scores[label] > scores[best]) best = label;
  return best;
}

int main(void) {
  uint64_t front_ticks = 0, speech_ticks = 0, start;
  uintptr_t top, floor;
  volatile uint8_t *paint;
  const volatile uint8_t *seen;
  int32_t recording, hops = 0, runs = 0;
  tl_platform_init();
  top = tl_stack_pointer() - 8;
  floor = tl_stack_floor();
  if (top - floor > 16384u) floor = top - 16384u;
  for (paint = (volatile uint8_t *)floor; (uintptr_t)paint < top; ++paint) *paint = 0xA5;
  frontend_init(&front);
  micro_speech_init(&speech);
  for (recording = 0; recording < AUDIO_RECORDINGS; ++recording) {
    const int16_t *audio = audio_samples[recording];
    const int32_t count = audio_lengths[recording];
    int32_t hop, frames = 0, next = 0;
    frontend_reset(&front);
    memset(ring, 0, sizeof ring);
    tl_write("r ");
    put_int(recording);
    tl_write("\n");
    for (hop = 0; (hop + 1) * FRONTEND_PULSE <= count; ++hop) {
      int8_t features[FEATURES];
      start = tl_clock();
      frontend_invoke(&front, audio + hop * FRONTEND_PULSE, features);
      front_ticks += tl_clock() - start;
      ++hops;
      if (hop < FRONTEND_DELAY) continue;
      memcpy(ring[next], features, FEATURES);
      next = (next + 1) % FRAMES;
      ++frames;
      if (frames % EVERY == 0 || (hop + 2) * FRONTEND_PULSE > count) {
        int8_t scores[MICRO_SPEECH_OUTPUT0_COUNT];
        int32_t label = spot(next, scores, &speech_ticks), i;
        ++runs;
        tl_write("l ");
        put_int(recording);
        tl_write(" ");
        put_int(frames);
        tl_write(" ");
        tl_write(labels[label]);
        for (i = 0; i < MICRO_SPEECH_OUTPUT0_COUNT; ++i) {
          tl_write(" ");
          put_int(scores[i]);
        }
        tl_write("\n");
      }
    }
  }
  for (seen = (const volatile uint8_t *)floor; (uintptr_t)seen < top && *seen == 0xA5;) ++seen;
  tl_write("h ");
  put_int((int64_t)front_ticks);
  tl_write(" ");
  put_int(hops);
  tl_write("\nm ");
  put_int((int64_t)speech_ticks);
  tl_write(" ");
  put_int(runs);
  start = tl_clock();
  tl_calibration_loop();
  tl_write("\nk ");
  put_int((int64_t)(tl_clock() - start));
  tl_write("\ns ");
  put_int((int64_t)(top - (uintptr_t)seen));
  tl_write("\nb ");
  put_int((int64_t)sizeof front);
  tl_write(" ");
  put_int((int64_t)sizeof speech);
  tl_write(" ");
  put_int((int64_t)sizeof ring);
  tl_write("\ne\n");
  tl_finish();
  return 0;
}
