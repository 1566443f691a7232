package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
)

// telemetry is the command's OpenTelemetry set-up, from the standard
// OTEL_* environment variables: nil providers when nothing is configured.
type telemetry struct {
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	shutdown []func(context.Context) error
}

// tel is the process's set-up, made when a command first builds an agent
// (so that a command that runs none never reads the OTEL_* variables) and
// closed by run at exit.
var tel = &lazyTelemetry{getenv: os.Getenv, console: os.Stderr}

type lazyTelemetry struct {
	getenv  func(string) string
	console io.Writer
	once    sync.Once
	t       *telemetry
	err     error
}

func (l *lazyTelemetry) get() (*telemetry, error) {
	l.once.Do(func() { l.t, l.err = newTelemetry(context.Background(), l.getenv, l.console) })
	return l.t, l.err
}

// Close flushes and stops the telemetry, if it was set up.
func (l *lazyTelemetry) Close() {
	if l.t != nil {
		l.t.Close(l.console)
	}
}

// shutdownTimeout bounds the flush of spans and metrics at exit.
const shutdownTimeout = 5 * time.Second

// newTelemetry reads the OTEL_* variables through getenv:
// OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER (otlp, console, none;
// unset means otlp when an OTLP endpoint is set and none otherwise),
// OTEL_SDK_DISABLED, and, through the exporters and the SDK themselves,
// OTEL_EXPORTER_OTLP_* , OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
// OTEL_BSP_*. Console output goes to console (stderr), never to stdout,
// which holds the command's answer.
func newTelemetry(ctx context.Context, getenv func(string) string, console io.Writer) (*telemetry, error) {
	t := &telemetry{}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return t, nil
	}
	traces, err := exporterKind(getenv, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if err != nil {
		return nil, err
	}
	metrics, err := exporterKind(getenv, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if err != nil {
		return nil, err
	}
	if traces == "none" && metrics == "none" {
		return t, nil
	}
	if traces == "otlp" || metrics == "otlp" {
		for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
			if p := strings.TrimSpace(getenv(v)); p != "" && p != "http/protobuf" {
				return nil, cli.Usage("set "+v+"=http/protobuf, or unset it", "%s is %q: cairn exports OTLP over http/protobuf only", v, p)
			}
		}
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "cairn"), attribute.String("service.version", version())),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, cli.Usage("check OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME", "telemetry resource: %v", err)
	}
	switch traces {
	case "otlp":
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, cli.Usage("check OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP trace exporter: %v", err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	case "console":
		exp, err := stdouttrace.New(stdouttrace.WithWriter(console))
		if err != nil {
			return nil, err
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	}
	if t.tp != nil {
		t.shutdown = append(t.shutdown, t.tp.Shutdown)
	}
	var reader sdkmetric.Reader
	switch metrics {
	case "otlp":
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, cli.Usage("check OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP metric exporter: %v", err)
		}
		reader = sdkmetric.NewPeriodicReader(exp)
	case "console":
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(console))
		if err != nil {
			return nil, err
		}
		reader = sdkmetric.NewPeriodicReader(exp)
	}
	if reader != nil {
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		t.shutdown = append(t.shutdown, t.mp.Shutdown)
	}
	return t, nil
}

// exporterKind returns the exporter the variable v names: otlp, console
// or none. Unset, it is otlp when an OTLP endpoint is set (the general one
// or the signal's, endpointVar), none otherwise: cairn sends nothing
// unless asked.
func exporterKind(getenv func(string) string, v, endpointVar string) (string, error) {
	val := strings.ToLower(strings.TrimSpace(getenv(v)))
	switch val {
	case "otlp", "console", "none":
		return val, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv(endpointVar) != "" {
			return "otlp", nil
		}
		return "none", nil
	}
	return "", cli.Usage(v+"=otlp, console or none", "%s is %q: cairn knows otlp, console and none", v, getenv(v))
}

// Close flushes what the exporters hold and stops them, within
// shutdownTimeout; an export that fails is reported on w and does not
// change the exit status.
func (t *telemetry) Close(w io.Writer) {
	if len(t.shutdown) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for _, f := range t.shutdown {
		if err := f(ctx); err != nil {
			fmt.Fprintf(w, "cairn: telemetry: %v\n", err)
		}
	}
}

// use gives an agent the command's providers.
func (t *telemetry) use(a *agent.Agent) {
	if t.tp != nil {
		a.TracerProvider = t.tp
	}
	if t.mp != nil {
		a.MeterProvider = t.mp
	}
}

// traced wraps an agent constructor so that its agents use the command's
// telemetry.
func traced(newAgent func(cairn.Store) (*agent.Agent, error)) func(cairn.Store) (*agent.Agent, error) {
	return func(st cairn.Store) (*agent.Agent, error) {
		t, err := tel.get()
		if err != nil {
			return nil, err
		}
		a, err := newAgent(st)
		if err == nil {
			t.use(a)
		}
		return a, err
	}
}
