"""Voice (SPEC F4, F5, G3, A6; issue 16): audio in and out, speech to text, text to speech.

- :mod:`loopact.voice.audio`: the interface (16 kHz mono PCM frames with timestamps), WAV I/O;
- :mod:`loopact.voice.files`: WAV files and raw PCM pipes; :mod:`loopact.voice.device`: a
  local sound device (PortAudio); :mod:`loopact.voice.room`: a simulated room for tests;
- :mod:`loopact.voice.vad`: voice activity and end of utterance; :mod:`loopact.voice.echo`:
  the robot's own voice removed from the microphone signal;
- :mod:`loopact.voice.stt` / :mod:`loopact.voice.tts`: engines (offline and OpenAI-compatible);
- :mod:`loopact.voice.text`: sentences of a streaming reply and their language;
- :mod:`loopact.voice.playback`: the robot's voice (generations, pause, resume, stop, barge-in);
- :mod:`loopact.voice.listen`: microphone -> utterances -> transcripts, with barge-in.

The agent side (commands, stops, replies spoken as they stream) is
``loopact.channels.voice``; the composition for ``loopact run --voice`` is ``loopact.app.voice``.
Importing this package loads no engine and opens no device.
"""
