// Command otelcol-mini is the smallest OpenTelemetry Collector the e2e
// tests need: the OTLP receiver and the OTLP/HTTP exporter.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	var f otelcol.Factories
	f.Telemetry = otelconftelemetry.NewFactory()
	f.Receivers = map[component.Type]receiver.Factory{}
	rf := otlpreceiver.NewFactory()
	f.Receivers[rf.Type()] = rf
	f.Exporters = map[component.Type]exporter.Factory{}
	ef := otlphttpexporter.NewFactory()
	f.Exporters[ef.Type()] = ef
	return f, nil
}

func main() {
	cmd := otelcol.NewCommand(otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "otelcol-mini", Description: "e2e collector", Version: "0"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
			DefaultScheme:     "file",
		}},
	})
	if err := cmd.Execute(); err != nil {
		log.Fatal(err)
	}
}
