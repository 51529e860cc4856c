// A stage: work a stream does beside its VAD clock (end-of-turn detection, transcripts, barge-in),
// each one an object in the stream's small list (StreamState::stages) that its VAD worker walks.
// The VAD worker names no stage: a new stage is a class of stages/ and a line in the pipeline
// (src/engine/pipeline.cpp), nothing in the worker.
//
// Every call comes from the stream's VAD worker, the one thread that touches the stream's state and
// writes its events (a stage whose pool works on another thread hands results back through a
// mailbox of its own and wakes the stream with VadPool::schedule). Per frame, in this order:
//   collect()      results from the stage's pool become events (a verdict, a transcript)
//   on_segment()   each speech start and end the segmenter found in the frame, before its event
//   on_frame()     the frame's probability (its audio is in the stream's history already)
// and at the end of the stream on_end() once, then close() when the stream is retired. A stage
// holds the stream's frames while holds_frames(), holds its end while defers_end() (before the
// VAD's final segments) or busy() (after them), and keeps it from being retired while
// pins_stream() (a request in flight refers to it).
//
// The per-frame cost of a stream without stages is one empty loop: the VAD-only path is the one
// benchmarked in docs/PERFORMANCE.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "brisvox/engine/engine_config.h"
#include "brisvox/models/vad/streaming_segmenter.h"

namespace brisvox::engine {

struct StreamState;

class Stage {
 public:
  virtual ~Stage() = default;

  // What the stage needs of its stream, asked once before the stream is made: model-rate samples
  // of audio history it looks back on, and bytes of payloads it emits (both 0 by default).
  virtual std::size_t history_samples(int /*model_rate_hz*/, int /*chunk_samples*/, const VadOptions& /*vad*/) const {
    return 0;
  }
  virtual std::size_t payload_bytes() const { return 0; }

  virtual void collect(StreamState& /*s*/) {}
  virtual void on_segment(StreamState& /*s*/, const SegmentEvent& /*e*/) {}
  // `frame_ready_ns`: when the frame's last sample arrived (what a latency is timed from).
  virtual void on_frame(StreamState& /*s*/, float /*probability*/, std::int64_t /*frame_ready_ns*/) {}
  virtual void on_end(StreamState& /*s*/) {}
  virtual void close(StreamState& /*s*/) {}

  virtual bool holds_frames() const { return false; }
  virtual bool defers_end() const { return false; }
  virtual bool busy() const { return false; }
  virtual bool pins_stream() const { return false; }
};

}  // namespace brisvox::engine
