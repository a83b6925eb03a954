"""What each part of the screen shows at the display cursor, one module per part.

The display cursor is the last wire event shown: live it follows the stream,
paused it stays, a step moves it by one. Everything on screen is a function of
the core's state at the cursor, computed here with no Textual: a widget asks for
its view, compares it with the one it drew, and redraws only when it changed."""
