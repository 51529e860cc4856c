"""A local voice agent in Pipecat on brisvox alone: VAD, end of turn, speech-to-text and speech; the
"LLM" echoes what it heard: put yours between the turn and the speech (docs/PYTHON.md).
  python pipecat_agent.py call.wav reply.wav    the caller from a WAV, the agent's voice to a WAV
  python pipecat_agent.py --mic                 microphone and speakers (pip install "pipecat-ai[local]")
"""
import asyncio, sys, wave
from pipecat.frames.frames import (EndFrame, InputAudioRawFrame, TranscriptionFrame, TTSAudioRawFrame,
                                   TTSSpeakFrame, UserStartedSpeakingFrame, UserStoppedSpeakingFrame)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.runner import PipelineRunner
from pipecat.pipeline.task import PipelineParams, PipelineTask
from pipecat.processors.audio.vad_processor import VADProcessor
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.turns.user_stop import TurnAnalyzerUserTurnStopStrategy
from pipecat.turns.user_turn_processor import UserTurnProcessor
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from brisvox.pipecat import BrisvoxSmartTurnAnalyzer, BrisvoxSTTService, BrisvoxTTSService, BrisvoxVADAnalyzer

class Echo(FrameProcessor):  # the LLM's place: a finished turn in, a reply out
    def __init__(self):
        super().__init__(); self.heard, self.turn_over = [], False
    async def process_frame(self, frame, direction):  # the turn's end and its last words come in either order
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame): self.heard.append(frame.text)
        if isinstance(frame, (UserStartedSpeakingFrame, UserStoppedSpeakingFrame)):
            self.turn_over = isinstance(frame, UserStoppedSpeakingFrame)
        await self.push_frame(frame, direction)
        if self.turn_over and self.heard:
            await self.push_frame(TTSSpeakFrame("You said: " + " ".join(self.heard)))
            self.heard, self.turn_over = [], False
class WavOut(FrameProcessor):  # the file mode's speaker
    def __init__(self, path):
        super().__init__(); self.out = wave.open(path, "wb"); self.out.setparams((1, 2, 16000, 0, "NONE", ""))
    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSAudioRawFrame): self.out.writeframes(frame.audio)
        await self.push_frame(frame, direction)
async def main(args):
    turns = UserTurnStrategies(stop=[TurnAnalyzerUserTurnStopStrategy(turn_analyzer=BrisvoxSmartTurnAnalyzer())])
    agent = [VADProcessor(vad_analyzer=BrisvoxVADAnalyzer()), BrisvoxSTTService(),
             UserTurnProcessor(user_turn_strategies=turns), Echo(), BrisvoxTTSService()]
    if args[0] == "--mic":
        from pipecat.transports.local.audio import LocalAudioTransport, LocalAudioTransportParams
        io = LocalAudioTransport(LocalAudioTransportParams(audio_in_enabled=True, audio_out_enabled=True))
        agent = [io.input(), *agent, io.output()]
    else:
        agent.append(WavOut(args[1]))
    task = PipelineTask(Pipeline(agent), params=PipelineParams(audio_in_sample_rate=16000, audio_out_sample_rate=16000))
    if args[0] != "--mic":
        async def caller():  # the WAV at real time, in 20 ms frames, then 2 s of silence for the reply
            with wave.open(args[0]) as w: pcm = w.readframes(w.getnframes()) + bytes(64000)
            for i in range(0, len(pcm) - 639, 640):
                await task.queue_frame(InputAudioRawFrame(pcm[i:i + 640], 16000, 1)); await asyncio.sleep(0.02)
            await task.queue_frame(EndFrame())
        asyncio.get_running_loop().create_task(caller())
    await PipelineRunner(handle_sigint=False).run(task)

if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
