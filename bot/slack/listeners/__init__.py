"""One module per Slack surface, each with `register(app, ctx)`: commands, events, actions
(buttons and modals), shortcuts, home. Handlers parse with small pure helpers, call one service
function, and render with `bot.blocks`."""
