// dreamscope-gui [TRACE]: the desktop app. See docs/gui.md.
#include "main_window.h"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("dreamscope-gui"));
  QApplication::setOrganizationName(QStringLiteral("dreamscope"));
  QApplication::setApplicationVersion(QStringLiteral(DREAMSCOPE_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "Explore a dreamscope trace: timeline of CPU threads and GPU streams, search, kernel statistics."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("trace"), QStringLiteral("A trace file to open (trace.db)."),
                               QStringLiteral("[trace]"));
  parser.process(app);

  dreamscope::gui::MainWindow window;
  window.show();
  const QStringList args = parser.positionalArguments();
  if (!args.isEmpty()) window.open_file(args.front());
  return QApplication::exec();
}
