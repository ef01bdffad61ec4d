// StreamRelay client kit for React Native and the web (conformance/CLIENT_RULES.md).
export { SSEParser, SSELineTooLongError } from './sseParser.js';
export { RenderBuffer, safeCut, graphemes, graphemesFallback, RENDER_INTERVAL_MS, LONG_RUN_CHARACTERS, FIRST_RENDER_CHARACTERS } from './renderBuffer.js';
export { DirectionDecider, decideDirection, isArabicScalar, layoutForSample, SAMPLE_SCALARS, MARKDOWN_SYNTAX, ARABIC_LINE_HEIGHT, DEFAULT_LINE_HEIGHT } from './textDirection.js';
export { DraftProgress, LONG_ANSWER_TOKENS, headingNumber, statedCount } from './draftProgress.js';
export { ReconnectPolicy, lateResumeDecision, lateResumeExpired, offersRetry, isEventStream, isJSON, isGatewayRetryable, MAX_ATTEMPTS, IDLE_LIMIT_MS,
  HARD_TIMEOUT_MS, MAX_JITTER_MS, jitterMs, dropWaitMs } from './reconnectPolicy.js';
export { ResponseRenderer, isBudgetLimited } from './responseRenderer.js';
export { AnswerParts, parsePart, countsAsToken, PART_TYPES } from './answerParts.js';
export { TypingIndicator, AutoScroll, BudgetState, budgetLimitedNote, networkAdvice, browserNetworkConditions, telemetryRecord,
  EXPECTED_FIRST_TOKEN_MS, SLOW_CONNECTION_WARNING, NORMAL_BACKOFF_MS, SLOW_BACKOFF_MS } from './uiState.js';
export { RelayChatClient, STOP_ATTEMPTS, STOP_RETRY_MS, STOP_TIMEOUT_MS } from './relayClient.js';
export { RelayStream, LONG_POLL_MIN_INTERVAL_MS } from './relayStream.js';
export { RelayAPIError, decodeAPIError, parseRetryAfter } from './relayAPIError.js';
export { randomRequestId } from './requestId.js';
export { systemClock } from './clock.js';
export { ProxyBufferingDetector, FIRST_BYTE_BOUND_MS, BURST_MIN_EVENTS, BURST_MIN_WAIT_MS, BURST_END_WINDOW_MS } from './proxyBuffering.js';
export { xhrFetch, fetchStreamsBodies } from './xhrTransport.js';
export { MarkdownLineScanner } from './markdownLines.js';
export { relayChatTransportOptions, relayMessageOf, relayMessagesOf, sseIdsIn } from './aiSdkTransport.js';
